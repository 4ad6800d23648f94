"""stable-baselines3 on the vector env: every agent of every env is one SB3 sub-env."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from fedbandit_env.rl.common import set_torch_threads
from fedbandit_env.rl.view import LearnerView, VectorMessageFn, learner_rewards

vector_learner_rewards = learner_rewards  # the former name


class VectorAgentVecEnv(VecEnv):
    """Every agent of every env of a vector env (:mod:`fedbandit_env.vector`) is one of
    SB3's sub-envs: sub-env ``b N + i`` is agent ``i`` of env ``b``, one model acts for
    all (shared parameters), each on its own flat observation, laid out as
    :class:`~fedbandit_env.rl.AgentVecEnv` lays out the PettingZoo env's.

    The envs run in lockstep: at the horizon (or at a sampled ``episode_lengths`` cut,
    one length for all envs each episode) every sub-env reports its last observation as
    ``terminal_observation`` with ``"TimeLimit.truncated"`` (and its episode's
    ``cumulative_regret``, ``cumulative_comm_cost`` and, under privacy, ``epsilon``, as
    the PettingZoo env's infos give them) and every env resets
    (continuing its generators). ``seed(s)`` seeds env ``b``'s next reset with
    ``s + b N`` (SB3's ``seed + index`` of its first agent), as ``AgentVecEnv`` seeds
    copy ``b``.

    Args:
        venv: The vector env with the learner's stack in vector form
            (:meth:`LearnerStack.make_vec <fedbandit_env.rl.LearnerStack.make_vec>`).
        agent_space: One agent's PettingZoo observation space (the flat layout).
        reward: ``"own"``, ``"neg_regret"``, ``"team"`` or ``"team_value"``.
        message_fn: Every agent's message (``obs -> (B, N, D)``; default zeros).
        scale: Map every bounded entry of the flat observation onto ``[-1, 1]``.
        torch_threads: torch's intra-op threads (default 1; ``None``: leave as is).
        episode_lengths: ``(low, high)``: cut every episode after a length drawn
            log-uniformly from ``low..high``.

    Examples:
        >>> from fedbandit_env.rl import LearnerStack
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> stack = LearnerStack.for_setting("neighbours")
        >>> scenario = Scenario(n_agents=3, n_arms=2, horizon=2, setting="neighbours")
        >>> env = VectorAgentVecEnv.for_stack(stack, scenario, copies=4)
        >>> _ = env.seed(0); obs = env.reset()
        >>> obs.shape[0], env.num_envs
        (12, 12)
        >>> _ = env.step(np.zeros(12, int))
        >>> obs, rewards, dones, infos = env.step(np.zeros(12, int))
        >>> bool(dones.all()), infos[0]["TimeLimit.truncated"]
        (True, True)
    """

    def __init__(
        self,
        venv: Any,
        agent_space: spaces.Dict,
        reward: str = "own",
        message_fn: VectorMessageFn | None = None,
        scale: bool = False,
        torch_threads: int | None = 1,
        episode_lengths: tuple[int, int] | None = None,
    ) -> None:
        set_torch_threads(torch_threads)
        if not venv.unwrapped.backend.is_numpy:
            raise ValueError(
                "VectorAgentVecEnv hands SB3 NumPy arrays: make the vector env with "
                "device=None (the batched trainer reads a device env through LearnerView)"
            )
        self.view = LearnerView(venv, agent_space, reward, message_fn, scale, episode_lengths)
        self.venv = venv
        self.layout = self.view.layout
        self.dict_space = agent_space
        self.reward_kind = self.view.reward_kind
        self.message_fn = message_fn
        self.n_agents = self.view.n_agents
        self.copies = self.view.copies
        self.episode_lengths = self.view.episode_lengths
        super().__init__(
            self.view.rows, self.view.observation_space, spaces.Discrete(int(venv.n_arms))
        )

    @classmethod
    def for_stack(
        cls, stack: Any, scenario: Any, copies: int = 1, **kwargs: Any
    ) -> VectorAgentVecEnv:
        """``copies`` envs of ``scenario`` under ``stack`` (its vector form, its message,
        reward and scaling)."""
        probe = stack.make_env(scenario)
        space = probe.observation_space(probe.possible_agents[0])
        probe.close()
        message_fn = stack.vector_messages if stack.share_means else None
        kwargs = {"reward": stack.reward, "scale": stack.scale, "message_fn": message_fn,
                  **kwargs}  # fmt: skip
        return cls(stack.make_vec(scenario, copies), space, **kwargs)

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """SB3's seeding (each env's next reset), and the episode lengths' generator."""
        self.view.seed_lengths(seed)
        return super().seed(seed)

    @property
    def scaled(self) -> bool:
        """Whether observations are scaled onto ``[-1, 1]`` by their bounds."""
        return self.view.scaling is not None

    def reset(self) -> VecEnvObs:
        """Reset every env (with the seeds set by :meth:`seed`, if any)."""
        n = self.n_agents
        seeds = [self._seeds[b * n] for b in range(self.copies)]
        seed: Any = None if all(s is None for s in seeds) else seeds
        obs = self.view.reset(seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Store one arm per agent of every env."""
        arms = np.asarray(actions).reshape(-1)
        if arms.size != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got shape {np.shape(actions)}")
        self._arms = arms.astype(np.int64)

    def step_wait(self) -> VecEnvStepReturn:
        """Step every agent of every env; at the horizon (or the cut) all reset."""
        obs, learned, done, ended = self.view.step(self._arms)
        out_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if ended is not None:  # each agent's episode totals, as the PettingZoo env's infos
            n = self.n_agents
            regret = np.asarray(ended["regret"], dtype=np.float64).reshape(-1)
            cost = np.repeat(np.asarray(ended["comm_cost"], dtype=np.float64), n)
            spent = ended["epsilon"]
            for j, info in enumerate(out_infos):
                info["terminal_observation"] = ended["last"][j]
                info["TimeLimit.truncated"] = True
                info["cumulative_regret"] = float(regret[j])
                info["cumulative_comm_cost"] = float(cost[j])
                if spent is not None:
                    info["epsilon"] = float(spent[j // n])
        dones = np.full(self.num_envs, done)
        return obs, np.asarray(learned, dtype=np.float32), dones, out_infos

    def close(self) -> None:
        """Close the vector env."""
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The vector env's attribute, once per sub-env."""
        return [getattr(self.venv, attr_name)] * len(list(self._get_indices(indices)))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the vector env (shared by every sub-env)."""
        setattr(self.venv, attr_name, value)

    def env_method(
        self, method_name: str, *args: Any, indices: VecEnvIndices = None, **kwargs: Any
    ) -> list[Any]:
        """Call a method of the vector env, once."""
        result = getattr(self.venv, method_name)(*args, **kwargs)
        return [result] * len(list(self._get_indices(indices)))

    def env_is_wrapped(self, wrapper_class: type[Any], indices: VecEnvIndices = None) -> list[bool]:
        """Whether the vector env has a layer of ``wrapper_class``."""
        layer, found = self.venv, False
        while layer is not None and not found:
            found = isinstance(layer, wrapper_class)
            layer = getattr(layer, "env", None)
        return [found] * len(list(self._get_indices(indices)))

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No pictures."""
        return [None] * self.num_envs


__all__ = ["VectorAgentVecEnv", "VectorMessageFn", "vector_learner_rewards"]
