"""A stable-baselines3 ``VecEnv`` with one sub-env per agent (parameter sharing)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from fedbandit_env.rl.common import (
    batch_observations,
    check_episode_lengths,
    check_reward,
    draw_episode_length,
    learner_rewards,
    scaled_space,
    set_torch_threads,
)
from fedbandit_env.type_aliases import Action, AgentID, Observation
from fedbandit_env.wrappers.arm_actions import MessageFn, arm_space, pack
from fedbandit_env.wrappers.flatten import flat_box


class AgentVecEnv(VecEnv):
    """Every agent of one or several parallel envs is one of SB3's sub-envs: a single
    model acts for all agents (shared parameters), each on its own observation.

    With ``k`` copies of an env (``AgentVecEnv([make() for _ in range(k)])``) a batch holds
    ``k N`` agent-steps from ``k`` independent episodes (different instances when the env
    draws one per reset), so a PPO update sees more instances for the same horizon. Sub-env
    ``c N + i`` is agent ``i`` of copy ``c``. A copy whose agents reach the horizon resets
    on its own (continuing its seeded generator) and reports each agent's last observation
    as ``infos[j]["terminal_observation"]`` with ``"TimeLimit.truncated"``, as SB3 expects.
    ``seed(s)`` (which SB3 calls when a model is built with ``seed=s``) seeds copy ``c``'s
    next reset with ``s + c N`` (SB3's ``seed + index`` of its first agent), so training is
    reproducible. No SuperSuit: its conversion ignores ``seed``.

    Args:
        env: A parallel env, or a sequence of copies (same spaces and agents), with any
            stack of wrappers; all agents must share spaces.
        reward: ``"own"``, ``"neg_regret"`` or ``"team"``
            (:func:`~fedbandit_env.rl.common.check_reward`).
        flatten: Present observations as one float32 ``Box``.
        message_fn: Each learner's message when the env carries messages (default zeros).
        scale: Map every bounded entry of the flat observation onto ``[-1, 1]``
            (:func:`~fedbandit_env.rl.common.scale_box`); the box then says so.
        torch_threads: torch's intra-op thread count, set when the env is built (default
            1), so that SB3 used directly on this env trains a small network at one
            thread's speed: torch's default of one thread per core made PPO 19-62x slower
            on two shared cores. ``None`` leaves torch as it is.
        episode_lengths: ``(low, high)``: each copy's episode is cut (truncated, as a
            time limit) after a length drawn log-uniformly from ``low..high``, a new one
            every episode (from ``seed``'s generator), so a learner trains over many
            horizons; ``high`` may not exceed the env's horizon. ``None``: the env's.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> venv = AgentVecEnv(federated_mab_v0.parallel_env(n_agents=3, n_arms=2, horizon=2))
        >>> _ = venv.seed(0); obs = venv.reset()
        >>> obs.shape, venv.num_envs
        ((3, 4), 3)
        >>> obs, rewards, dones, infos = venv.step(np.array([1, 1, 0]))
        >>> obs, rewards, dones, infos = venv.step(np.array([1, 1, 0]))
        >>> dones.tolist(), infos[0]["TimeLimit.truncated"]
        ([True, True, True], True)
        >>> make = lambda: federated_mab_v0.parallel_env(n_agents=3, n_arms=2, horizon=2)
        >>> AgentVecEnv([make(), make()]).num_envs
        6
    """

    def __init__(
        self,
        env: ParallelEnv[Any, Any, Any] | Sequence[ParallelEnv[Any, Any, Any]],
        reward: str = "own",
        flatten: bool = True,
        message_fn: MessageFn | None = None,
        scale: bool = False,
        torch_threads: int | None = 1,
        episode_lengths: tuple[int, int] | None = None,
    ) -> None:
        set_torch_threads(torch_threads)
        envs = [env] if isinstance(env, ParallelEnv) else list(env)
        if not envs:
            raise ValueError("env must be a parallel env or a non-empty sequence of copies")
        for e in envs:
            if not isinstance(e, ParallelEnv):
                raise TypeError(f"env must be a PettingZoo ParallelEnv, got {type(e).__name__}")
        if len({id(e) for e in envs}) != len(envs):
            raise ValueError("the copies must be distinct env objects (build one per copy)")
        self.envs = envs
        self.env = envs[0]
        self.agents: list[AgentID] = list(self.env.possible_agents)
        first = self.agents[0]
        inner = self.env.observation_space(first)
        for a in self.agents[1:]:
            if self.env.observation_space(a) != inner or self.env.action_space(
                a
            ) != self.env.action_space(first):
                raise ValueError(f"all agents must share spaces; {a} differs from {first}")
        for c, e in enumerate(envs[1:], start=1):
            if list(e.possible_agents) != self.agents or e.observation_space(first) != inner:
                raise ValueError(f"copy {c} differs from copy 0 in its agents or spaces")
        self._inner = inner
        self.flatten = flatten
        self.reward_kind = check_reward(reward)
        self.message_fn = message_fn
        arm, self._message_dim = arm_space(self.env, first)
        obs_space: Any = flat_box(inner) if flatten else inner
        self._scale = None
        if scale and flatten:
            obs_space, self._scale = scaled_space(obs_space)
        self._n = len(self.agents)
        self._actions: np.ndarray = np.zeros(self._n * len(envs), dtype=np.int64)
        self._obs: list[dict[AgentID, Observation]] = [{} for _ in envs]
        self.episode_lengths = self._check_lengths(episode_lengths)
        self._length_rng = np.random.default_rng(0)
        self._lengths = [0] * len(envs)  # the current episode's cut, 0: none
        self._t = [0] * len(envs)
        super().__init__(self._n * len(envs), obs_space, arm)

    def _check_lengths(self, lengths: tuple[int, int] | None) -> tuple[int, int] | None:
        return check_episode_lengths(lengths, getattr(self.env.unwrapped, "horizon", None))

    def _draw_length(self) -> int:
        return draw_episode_length(self._length_rng, self.episode_lengths)

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """SB3's seeding (each copy's next reset), and the episode lengths' generator."""
        self._length_rng = np.random.default_rng(seed)
        return super().seed(seed)

    @property
    def dict_space(self) -> spaces.Space[Any]:
        """Every agent's observation space before flattening (its Dict of entries)."""
        return self._inner

    @property
    def scaled(self) -> bool:
        """Whether observations are scaled onto ``[-1, 1]`` by their bounds."""
        return self._scale is not None

    # ------------------------------------------------------------------ core
    def _stack(self, obs: dict[AgentID, Observation]) -> VecEnvObs:
        return batch_observations(self._inner, obs, self.agents, self.flatten, self._scale)

    def _join(self, parts: list[VecEnvObs]) -> VecEnvObs:
        if len(parts) == 1:
            return parts[0]
        if isinstance(parts[0], dict):
            dicts = [p for p in parts if isinstance(p, dict)]
            return {k: np.concatenate([d[k] for d in dicts]) for k in parts[0]}
        return np.concatenate([np.asarray(p) for p in parts])

    def _reset_copy(self, c: int) -> tuple[VecEnvObs, list[dict[str, Any]]]:
        options = self._options[c * self._n] or None
        obs, infos = self.envs[c].reset(seed=self._seeds[c * self._n], options=options)
        self._obs[c] = obs
        self._t[c], self._lengths[c] = 0, self._draw_length()
        return self._stack(obs), [dict(infos.get(a, {})) for a in self.agents]

    def reset(self) -> VecEnvObs:
        """Reset every copy (with the seeds set by :meth:`seed`, if any)."""
        parts, infos = [], []
        for c in range(len(self.envs)):
            stacked, info = self._reset_copy(c)
            parts.append(stacked)
            infos += info
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = infos
        return self._join(parts)

    def step_async(self, actions: np.ndarray) -> None:
        """Store one arm per agent of every copy."""
        arms = np.asarray(actions).reshape(-1)
        if arms.size != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got shape {np.shape(actions)}")
        self._actions = arms.astype(np.int64)

    def step_wait(self) -> VecEnvStepReturn:
        """Step every agent of every copy; a copy at its horizon resets on its own."""
        if not all(self._obs):
            raise RuntimeError("step before reset()")
        parts, rewards_out, dones_out, infos_out = [], [], [], []
        for c, env in enumerate(self.envs):
            base = c * self._n
            actions: dict[AgentID, Action] = {
                a: pack(
                    self._actions[base + i], a, self._obs[c][a], self._message_dim, self.message_fn
                )
                for i, a in enumerate(self.agents)
            }
            obs, rewards, terms, truncs, infos = env.step(actions)
            out_infos = [dict(infos[a]) for a in self.agents]
            rewards_out.append(learner_rewards(self.reward_kind, rewards, infos, self.agents, obs))
            dones = np.array([terms[a] or truncs[a] for a in self.agents])
            self._t[c] += 1
            if self._t[c] == self._lengths[c] and not dones.all():  # a sampled horizon
                truncs = dict.fromkeys(self.agents, True)
                dones[:] = True
            stacked = self._stack(obs)
            if dones.all():
                for i, a in enumerate(self.agents):
                    last: Any = (
                        stacked[i]
                        if isinstance(stacked, np.ndarray)
                        else {k: v[i] for k, v in stacked.items()}  # type: ignore[union-attr]
                    )
                    out_infos[i]["terminal_observation"] = last
                    out_infos[i]["TimeLimit.truncated"] = bool(truncs[a] and not terms[a])
                stacked, _ = self._reset_copy(c)
                self._seeds[base] = None  # a later auto-reset continues the generator
                self._options[base] = {}
            else:
                self._obs[c] = obs
            parts.append(stacked)
            dones_out.append(dones)
            infos_out += out_infos
        reward = np.array(rewards_out, dtype=np.float32).reshape(-1)
        return self._join(parts), reward, np.concatenate(dones_out), infos_out

    def close(self) -> None:
        """Close every copy."""
        for env in self.envs:
            env.close()

    # ------------------------------------------------------------------ VecEnv plumbing
    def _indices(self, indices: VecEnvIndices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices) if isinstance(indices, Iterable) else [int(indices)]

    def _copy_of(self, index: int) -> ParallelEnv[Any, Any, Any]:
        return self.envs[index // self._n]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute of the copy each index's agent lives in."""
        return [getattr(self._copy_of(i), attr_name) for i in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the copies the indices live in."""
        for c in {i // self._n for i in self._indices(indices)}:
            setattr(self.envs[c], attr_name, value)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Call a method once per copy the indices live in; its result for every index."""
        wanted = self._indices(indices)
        results = {
            c: getattr(self.envs[c], method_name)(*method_args, **method_kwargs)
            for c in dict.fromkeys(i // self._n for i in wanted)
        }
        return [results[i // self._n] for i in wanted]

    def env_is_wrapped(self, wrapper_class: type[Any], indices: VecEnvIndices = None) -> list[bool]:
        """Whether each index's copy has ``wrapper_class`` in its wrapper stack."""
        out = []
        for i in self._indices(indices):
            env, found = self._copy_of(i), False
            while True:
                found = found or isinstance(env, wrapper_class)
                inner = getattr(env, "env", None)
                if inner is None or inner is env:
                    break
                env = inner
            out.append(found)
        return out

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No image rendering."""
        return [None for _ in range(self.num_envs)]


def supersuit_vec_env(
    env: ParallelEnv[AgentID, Observation, Action], copies: int = 1, torch_threads: int | None = 1
) -> VecEnv:
    """SuperSuit's PettingZoo -> stable-baselines3 pipeline (``pettingzoo_env_to_vec_env_v1``
    then ``concat_vec_envs_v1``: every agent of ``copies`` copies of ``env`` is a sub-env)
    with SB3's seeding contract, so that ``PPO(..., seed=s)`` works and trains
    reproducibly: SuperSuit's ``ConcatVecEnv`` has no ``seed()``, which SB3 calls when a
    model is given a seed (``AttributeError``); here ``seed(s)`` reaches the envs at the
    next reset, as SB3's own vec envs do (copy ``i`` reset with ``s + i``).

    ``env`` must have flat observations and a discrete action, e.g.
    ``FlattenObservations(ArmActions(env, message_fn))``; :class:`AgentVecEnv` is the
    package's own route and needs neither.

    Args:
        env: A parallel env of identical agents, with ``Box`` observations.
        copies: Copies of the env side by side (SuperSuit's ``num_vec_envs``), >= 1.
        torch_threads: torch's thread count, set here (see :class:`AgentVecEnv`).

    Raises:
        ValueError: If ``copies`` < 1.
        ImportError: Without SuperSuit (``pip install supersuit``).

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> from fedbandit_env.wrappers import ArmActions, FlattenObservations
        >>> base = Scenario(n_agents=3, n_arms=2, horizon=5).make_env()
        >>> venv = supersuit_vec_env(FlattenObservations(ArmActions(base)), copies=2)
        >>> venv.num_envs, len(venv.seed(7)), venv.reset().shape
        (6, 6, (6, 4))
    """
    import supersuit  # type: ignore[import-untyped]
    from supersuit.vector.sb3_vector_wrapper import (  # type: ignore[import-untyped]
        SB3VecEnvWrapper,
    )

    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        raise ValueError(f"copies must be an int >= 1, got {copies!r}")
    set_torch_threads(torch_threads)

    class SeededSB3VecEnv(SB3VecEnvWrapper):
        """SuperSuit's SB3 wrapper whose ``seed`` is applied at the next reset."""

        def __init__(self, venv: Any) -> None:
            super().__init__(venv)
            self.next_seed: int | None = None

        def seed(self, seed: int | None = None) -> list[int | None]:
            self.next_seed = seed
            return [None if seed is None else seed + i for i in range(self.num_envs)]

        def reset(self, seed: int | None = None, options: Any = None) -> Any:
            if seed is not None:
                self.next_seed = seed
            obs, self.reset_infos = self.venv.reset(seed=self.next_seed, options=options)
            self.next_seed = None  # later resets continue each env's own stream
            return obs

    markov = supersuit.pettingzoo_env_to_vec_env_v1(env)
    concat = supersuit.concat_vec_envs_v1(markov, copies, num_cpus=0, base_class="gymnasium")
    return SeededSB3VecEnv(concat)
