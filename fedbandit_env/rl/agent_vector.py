"""Every agent of every env as one sub-env of a Gymnasium ``VectorEnv``: the single-agent
view SuperSuit and stable-baselines3 users know, on which Gymnasium's vector wrappers run.

:class:`~fedbandit_env.vector.FederatedMABVecEnv` is a vector of *teams*: its rewards are
``(B, N)`` and its observations dicts of ``(B, N, ...)`` arrays, which Gymnasium's vector
wrappers (``RecordEpisodeStatistics``, ``NormalizeReward``, ``NormalizeObservation``,
``DictInfoToList``), written for one reward per sub-env, cannot read.
:class:`AgentVectorEnv` is the learner's view of it (:class:`~fedbandit_env.rl.view.LearnerView`:
the stack, the flat observation, the learning reward) as ``B N`` sub-envs:

============  =============================================================================
sub-env       row ``b N + i`` is agent ``i`` of env ``b``; ``reset(seed=s)`` seeds env ``b``
              with ``s + b`` (the PettingZoo env reset with ``s + b``)
observation   ``Box(W,)`` float32: the agent's flattened observation (the PettingZoo
              path's :class:`~fedbandit_env.wrappers.FlattenObservations` layout)
action        ``Discrete(M)``: the arm (the stack sends the message, if any)
reward        the stack's learning reward (``own``: the agent's local reward)
episode end   every sub-env at the horizon, as a truncation (a time limit, not a
              terminal state: bootstrap from it); ``autoreset_mode`` ``NEXT_STEP``
              (Gymnasium's default, the one every vector wrapper reads): the step that
              ends an episode returns its last observation, the step after it the next
              episode's first (its actions ignored, rewards 0)
infos         Gymnasium's form: each key with its ``_key`` mask; at an episode's end
              ``cumulative_regret`` (the agent's pseudo-regret) and ``comm_cost`` (its
              env's communication cost)
============  =============================================================================

Arrays are NumPy whatever device the envs run on (a Gymnasium wrapper reads NumPy).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from fedbandit_env.rl.view import LearnerView


class AgentVectorEnv(VectorEnv):
    """``B N`` single-agent sub-envs over a vector env with a learner's stack (module
    docstring).

    Args:
        view: The learner's view of the vector env (:meth:`LearnerView.for_stack`).

    Examples:
        >>> from gymnasium.wrappers.vector import NormalizeReward, RecordEpisodeStatistics
        >>> from fedbandit_env.rl import LearnerStack
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=4, setting="neighbours",
        ...              instances="train")
        >>> env = AgentVectorEnv.for_stack(LearnerStack.for_setting("neighbours"), s, copies=2)
        >>> env = NormalizeReward(RecordEpisodeStatistics(env))
        >>> obs, infos = env.reset(seed=0)
        >>> obs.shape, env.num_envs
        ((6, 17), 6)
        >>> for _ in range(4):
        ...     obs, rewards, terms, truncs, infos = env.step(np.zeros(6, int))
        >>> bool(truncs.all()), infos["episode"]["l"].tolist()
        (True, [4, 4, 4, 4, 4, 4])
        >>> obs, rewards, terms, truncs, infos = env.step(np.zeros(6, int))  # the next's first
        >>> bool(truncs.any()), rewards.tolist() == [0.0] * 6
        (False, True)
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}  # noqa: RUF012

    def __init__(self, view: LearnerView) -> None:
        self.view = view
        self.num_envs = view.rows
        self.single_observation_space: spaces.Box = view.observation_space
        self.single_action_space = spaces.Discrete(view.n_arms)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._all = np.ones(self.num_envs, dtype=bool)
        self._next: np.ndarray | None = None  # the next episode's first observation

    @classmethod
    def for_stack(
        cls, stack: Any, scenario: Any, copies: int = 1, device: Any = None
    ) -> AgentVectorEnv:
        """``copies`` envs of ``scenario`` under ``stack`` (a
        :class:`~fedbandit_env.rl.LearnerStack`) on ``device``, ``copies N`` sub-envs."""
        return cls(LearnerView.for_stack(stack, scenario, copies=copies, device=device))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every env: env ``b`` with ``seed + b`` (``None``: fresh draws).

        Raises:
            ValueError: For ``options`` (the sub-envs are agents of shared envs: an
                instance is pinned on the vector env itself).
        """
        if options:
            raise ValueError(f"AgentVectorEnv.reset takes no options, got {options!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an int (env b gets seed + b), got {seed!r}")
        super().reset(seed=seed)
        self._next = None
        return self._host(self.view.reset(seed=seed)), {}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Every agent pulls ``actions[b N + i]``; Gymnasium's five arrays (module
        docstring)."""
        none = np.zeros(self.num_envs, dtype=bool)
        if self._next is not None:  # NEXT_STEP: the step after an end starts the next one
            first, self._next = self._next, None
            return first, np.zeros(self.num_envs), none, none.copy(), {}
        obs, rewards, _, ended = self.view.step(np.asarray(actions).reshape(-1))
        reward = self._host(rewards).astype(np.float64)
        if ended is None:
            return self._host(obs), reward, none, none.copy(), {}
        self._next = self._host(obs)  # the view has reset every env already
        n = self.view.n_agents
        infos = {
            "cumulative_regret": self._host(ended["regret"]).astype(np.float64).reshape(-1),
            "_cumulative_regret": self._all.copy(),
            "comm_cost": np.repeat(self._host(ended["comm_cost"]).astype(np.float64), n),
            "_comm_cost": self._all.copy(),
        }
        return self._host(ended["last"]), reward, none, self._all.copy(), infos

    def _host(self, x: Any) -> np.ndarray:
        return np.asarray(self.view.backend.to_numpy(x))


__all__ = ["AgentVectorEnv"]
