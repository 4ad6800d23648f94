"""The federated multi-armed bandit as a Gymnasium vector env: ``B`` envs x ``N`` agents.

=================  ===========================================================================
Make               ``make_vec(scenario, num_envs)`` (the scenario's setting), or
                   ``FederatedMABVecEnv(problem, network, protocol, horizon, ..., num_envs)``
Step               ``step(arms)`` or ``step(arms, messages)``: ``arms (B, N)`` ints,
                   ``messages (B, N, D)`` floats; also ``step({"arm": .., "message": ..})``
Observations       a dict of arrays, leading shape ``(B, N)``, the PettingZoo env's keys:
                   ``arm (B, N)``, ``reward (B, N, 1)``, ``step (B, N, 1)``; with messages
                   ``messages (B, N, D)``: the message heard from **sender** ``s`` (zeros if
                   nobody heard it) and ``mask (B, N, N)``: ``mask[b, r, s]``, receiver ``r``
                   heard ``s`` (plus ``public_mask``, ``server (B, N, D)``,
                   ``server_mask (B, N, 1)`` as the protocol has them).
                   :func:`~fedbandit_env.core.routing.inbox` gives the PettingZoo form,
                   one ``(N, D)`` inbox per receiver, zeros where nothing arrived
Rewards            ``(B, N)`` float64, each agent's local reward
Terminations       ``(B, N)`` bool, never; truncations ``(B, N)``, every agent at the horizon
Infos              a dict of arrays: ``regret``, ``cumulative_regret`` ``(B, N)``;
                   ``peer_links``, ``server_links``, ``comm_cost``,
                   ``cumulative_comm_cost`` ``(B,)``; ``instance`` ``(B,)`` for drawn
                   instances
Autoreset          ``NEXT_STEP`` (Gymnasium's default): every env ends at the same step
                   (one horizon), so the call after the last step resets all of them (each
                   continuing its own generator, as ``reset()`` without a seed) and returns
                   the first observations with zero rewards; ``DISABLED`` raises instead
Seeds              ``reset(seed=s)``: env ``b`` is the PettingZoo env reset with ``s + b``
                   (a list seeds each env); the same instance, rewards and messages for the
                   same actions (:func:`fedbandit_env.testing.check_vector_replay`)

Device             ``device=None`` (NumPy, the default and the replay reference) or a torch
                   device (``"cuda"``, ``"cpu"``): observations, rewards, flags and infos
                   are then tensors there, actions may be tensors there too, and nothing
                   goes back to the host in a step (reward noise and gossip edges come from
                   the device's generator: same distribution, other numbers; module
                   :mod:`fedbandit_env.backend`). ``validate`` checks the actions' values
                   (default: on NumPy only; on a device the check is a host round-trip)
=================  ===========================================================================

Differences from Gymnasium's single-agent vector envs, by design: rewards and the
done flags carry an agent axis (every sub-env is a multi-agent env), and ``messages``
is sender-indexed: a step stays ``O(B N D)`` in message data on a complete graph. A
``mask`` may be a read-only view shared by all envs (broadcast): copy it before writing.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from typing import Any

import networkx as nx
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from fedbandit_env.backend import Backend, backend
from fedbandit_env.core.mab import CoreStep, MABCore
from fedbandit_env.core.routing import Routed
from fedbandit_env.envs.checks import check_wiring
from fedbandit_env.envs.infos import STEP_INFO
from fedbandit_env.envs.spaces import observation_space
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.distribution import ProblemDistribution
from fedbandit_env.problems.mab import MABProblem
from fedbandit_env.protocols.base import Protocol
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray
from fedbandit_env.validation import check_int, check_memory, check_reset_options, trial_bytes

VecObs = dict[str, np.ndarray]
"""A batched observation: key -> array with leading shape ``(B, N)``."""


def joint_spaces(
    n_agents: int,
    n_arms: int,
    horizon: int,
    reward_bounds: tuple[float, float],
    message_dim: int,
    message_bounds: tuple[float, float],
    protocol: Protocol,
) -> tuple[spaces.Dict, spaces.Space[Any]]:
    """One env's joint observation and action spaces (every agent; leading axis ``N``).

    Examples:
        >>> from fedbandit_env.protocols import Broadcast
        >>> obs, act = joint_spaces(3, 2, 10, (0.0, 1.0), 4, (-1.0, 1.0), Broadcast())
        >>> obs["messages"].shape, obs["mask"].shape, act["arm"].shape
        ((3, 4), (3, 3), (3,))
    """
    n = n_agents
    agent = observation_space(
        n, n_arms, horizon, reward_bounds, message_dim, message_bounds, protocol
    )
    reward, step = agent["reward"], agent["step"]
    assert isinstance(reward, spaces.Box) and isinstance(step, spaces.Box)
    out: dict[str, spaces.Space[Any]] = {
        "arm": spaces.Box(0, n_arms - 1, shape=(n,), dtype=np.int64),
        "reward": spaces.Box(float(reward.low[0]), float(reward.high[0]), (n, 1), np.float32),
        "step": spaces.Box(0.0, float(horizon), (n, 1), np.float32),
    }
    arms = spaces.MultiDiscrete(np.full(n, n_arms))
    if not message_dim:
        return spaces.Dict(out), arms
    out["messages"] = agent["messages"]  # (N, D): one row per sender
    out["mask"] = spaces.MultiBinary((n, n))
    if "public_mask" in agent.spaces:
        out["public_mask"] = spaces.MultiBinary((n, n))
    if "server" in agent.spaces:
        out["server"] = spaces.Box(-np.inf, np.inf, (n, message_dim), np.float32)
        out["server_mask"] = spaces.MultiBinary((n, 1))
    lo, hi = message_bounds
    message = spaces.Box(lo, hi, (n, message_dim), np.float32)
    return spaces.Dict(out), spaces.Dict({"arm": arms, "message": message})


def _seed_entry(seed: object) -> int | None:
    """One env's seed in a list given to ``reset``: ``None`` or an int (not a bool).

    Examples:
        >>> _seed_entry(3), _seed_entry(None)
        (3, None)
    """
    if seed is None:
        return None
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool | np.bool_):
        return int(seed)
    raise TypeError(f"reset(seed=[...]) entries are ints or None, got {seed!r}")


def autoreset_mode_of(value: AutoresetMode | str) -> AutoresetMode:
    """A vector env's autoreset mode: ``NEXT_STEP`` or ``DISABLED`` (every env ends at
    the same step, so ``SAME_STEP`` would hide the last observation of all).

    Examples:
        >>> autoreset_mode_of("NextStep").name
        'NEXT_STEP'
    """
    mode = AutoresetMode(value)
    if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED):
        raise ValueError(
            "autoreset_mode must be NEXT_STEP or DISABLED (every env ends at the same "
            f"step, so SAME_STEP would hide the last observation of all), got {mode}"
        )
    return mode


def check_per_sender(protocol: Protocol, message_dim: int) -> None:
    """Refuse a protocol whose receivers get different copies of one sender's message
    (a vector env keeps one message per sender), where messages are carried.

    Examples:
        >>> from fedbandit_env.protocols import Broadcast
        >>> check_per_sender(Broadcast(), 4)
    """
    if message_dim and not protocol.per_sender:
        raise ValueError(
            f"the protocol {type(protocol).__name__} hands receivers different copies "
            "of a sender's message; the vector env keeps one message per sender"
        )


class CoreVecEnv(VectorEnv):
    """What both vector envs share over their core (``self.core``: a
    :class:`~fedbandit_env.core.mab.MABCore` or a
    :class:`~fedbandit_env.core.linear.LinearCore`): the batched spaces, ``reset``,
    ``step`` with ``NEXT_STEP`` autoreset, the sender-indexed message entries and the
    infos. A subclass builds its core and sets ``num_envs``, ``n_agents``, ``horizon``,
    ``message_dim``, ``protocol``, ``backend``, ``validate``, ``distribution`` (what draws
    the instances, or ``None``) and ``_needs_reset``, and defines ``_joint`` (one env's
    observation and action spaces) and ``_observations``.

    Examples:
        >>> issubclass(FederatedMABVecEnv, CoreVecEnv)
        True
    """

    core: Any
    backend: Backend
    n_agents: int
    horizon: int
    message_dim: int
    protocol: Protocol
    validate: bool
    distribution: Any
    _needs_reset: bool

    @functools.cached_property
    def _joint(self) -> tuple[spaces.Dict, spaces.Space[Any]]:
        """One env's observation and action spaces (the subclass's)."""
        raise NotImplementedError

    def _observations(self, routed: Routed | None) -> VecObs:
        """Every env's observation after a step that delivered ``routed`` (the
        subclass's)."""
        raise NotImplementedError

    @functools.cached_property
    def single_observation_space(self) -> spaces.Dict:  # type: ignore[override]
        """One env's observation space (every agent; leading axis ``N``)."""
        return self._joint[0]

    @functools.cached_property
    def single_action_space(self) -> spaces.Space[Any]:  # type: ignore[override]
        """One env's action space."""
        return self._joint[1]

    @functools.cached_property
    def observation_space(self) -> spaces.Space[Any]:  # type: ignore[override]
        """The batched observation space (leading axis ``B``)."""
        return batch_space(self.single_observation_space, self.num_envs)

    @functools.cached_property
    def action_space(self) -> spaces.Space[Any]:  # type: ignore[override]
        """The batched action space (leading axis ``B``)."""
        return batch_space(self.single_action_space, self.num_envs)

    # ------------------------------------------------------------------ API
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[VecObs, dict[str, Any]]:
        """Start every env's episode: env ``b`` seeded ``seed + b`` (or ``seed[b]``).

        ``options={"problem": p}`` pins one instance for every env.
        """
        options = dict(check_reset_options(options))
        b = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * b
        elif isinstance(seed, int | np.integer) and not isinstance(seed, bool | np.bool_):
            seeds = [int(seed) + k for k in range(b)]
        elif isinstance(seed, Sequence | np.ndarray) and not isinstance(seed, str | bytes):
            seeds = [_seed_entry(s) for s in seed]
            if len(seeds) != b:
                raise ValueError(f"reset(seed=...) needs one seed per env ({b}), got {len(seeds)}")
        else:
            raise TypeError(
                f"reset(seed=...) takes an int, one int (or None) per env, or None; got "
                f"{type(seed).__name__} {seed!r}"
            )
        self.core.reset(seeds, options)
        self._needs_reset = False
        return self._observations(None), self._reset_infos()

    def step(
        self, actions: Any, messages: Any = None
    ) -> tuple[VecObs, FloatArray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Every agent of every env pulls ``arms[b, i]`` and sends ``messages[b, i]``
        (or ``actions = {"arm": arms, "message": messages}``)."""
        if self._needs_reset:
            if self.metadata["autoreset_mode"] == AutoresetMode.DISABLED or self.core.t == 0:
                raise RuntimeError("step() called before reset() or after the last step")
            obs, infos = self.reset()
            b, n, be = self.num_envs, self.n_agents, self.backend
            flags = be.zeros((b, n), be.boolean)
            return obs, be.zeros((b, n)), flags, be.copy(flags), infos
        if isinstance(actions, dict):
            if messages is not None:
                raise ValueError("pass the messages in the action dict or as an argument")
            extra = sorted(str(k) for k in actions if k not in ("arm", "message"))
            if extra:
                raise ValueError(
                    f"an action dict holds 'arm' and 'message'; unknown key(s) {extra}"
                )
            arms, messages = actions.get("arm"), actions.get("message")
        else:
            arms = actions
        checked, sent = self.core.check_actions(arms, messages, self.validate)
        step = self.core.step(checked, sent)
        self._needs_reset = step.done
        b, n, be = self.num_envs, self.n_agents, self.backend
        terminations = be.zeros((b, n), be.boolean)
        truncations = be.full((b, n), step.done, be.boolean)
        return (
            self._observations(step.routed),
            step.rewards,
            terminations,
            truncations,
            (self._step_infos(step)),
        )

    @property
    def needs_reset(self) -> bool:
        """Whether the next :meth:`step` resets every env (the episodes ended; with
        ``NEXT_STEP`` autoreset the vector wrappers reset their state with it)."""
        return self._needs_reset

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release."""

    @property
    def rolls_out(self) -> bool:
        """Whether :meth:`rollout` plays this env: where its core can roll out
        (``MABCore.rolls_out``, ``LinearCore.rolls_out``).

        Examples:
            >>> from fedbandit_env.problems import conflicting
            >>> FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=4, num_envs=2).rolls_out
            True
        """
        return bool(self.core.rolls_out)

    def rollout(
        self,
        act: Any,
        state: tuple[Any, ...],
        steps: IntArray,
        out: FloatArray,
        trace: tuple[IntArray, Float32Array] | None = None,
        cost_out: FloatArray | None = None,
        stop: Callable[[], bool] | None = None,
        observe: tuple[Any, tuple[Any, ...], Float32Array] | None = None,
    ) -> None:
        """Play the rest of every env's episode with a vector policy's compiled step, no
        Python between steps (:meth:`MABCore.rollout
        <fedbandit_env.core.mab.MABCore.rollout>`, :meth:`LinearCore.rollout
        <fedbandit_env.core.linear.LinearCore.rollout>`, whose arguments these are); the
        next :meth:`step` resets if the episodes ended. A vector layer that
        :attr:`rolls_out` passes its own ``observe`` hook down here.

        Examples:
            >>> from numba import njit
            >>> from fedbandit_env.problems import conflicting
            >>> @njit
            ... def arm_0(last, seen, t, arms):
            ...     arms[:] = 0
            >>> venv = FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=4, num_envs=2)
            >>> _ = venv.reset(seed=0)
            >>> venv.rollout(arm_0, (), np.array([4]), np.zeros((2, 3, 1)))
            >>> venv.core.t, venv.needs_reset
            (4, True)
        """
        self.core.rollout(act, state, steps, out, trace, cost_out, stop, observe)
        self._needs_reset = self.core.t >= self.core.horizon

    # ------------------------------------------------------------------ helpers
    def _with_messages(self, obs: VecObs, routed: Routed | None) -> VecObs:
        """``obs`` with the message entries of a delivery (``None``: before the first
        step, nothing heard), sender-indexed; by receiver and origin ``(B, N, N, D)``
        where the protocol's copies differ by receiver (the linear env's GammaHops)."""
        be = self.backend
        b, n, d = self.num_envs, self.n_agents, self.message_dim
        public = self.protocol.public_dim
        server = self.protocol.has_server
        if not self.protocol.per_sender:  # copies differ by receiver: (B, N, N, D)
            obs["messages"] = (
                np.zeros((b, n, n, d), np.float32)
                if routed is None or routed.inbox is None
                else routed.inbox
            )
            obs["mask"] = np.zeros((b, n, n), np.int8) if routed is None else routed.mask
            return obs
        if routed is None:
            obs["messages"] = be.zeros((b, n, d), be.float32)
            obs["mask"] = be.zeros((b, n, n), be.int8)
            if public:
                obs["public_mask"] = be.zeros((b, n, n), be.int8)
            if server:
                obs["server"] = be.zeros((b, n, d), be.float32)
                obs["server_mask"] = be.zeros((b, n, 1), be.int8)
            return obs
        obs["messages"] = routed.messages
        obs["mask"] = routed.mask
        if public:
            obs["public_mask"] = routed.mask if routed.public_mask is None else routed.public_mask
        if server:
            if routed.server is None or routed.server_mask is None:
                obs["server"] = np.zeros((b, n, d), np.float32)
                obs["server_mask"] = np.zeros((b, n, 1), np.int8)
            else:
                obs["server"], obs["server_mask"] = routed.server, routed.server_mask
        return obs

    def _reset_infos(self) -> dict[str, Any]:
        b, n, be = self.num_envs, self.n_agents, self.backend
        infos: dict[str, Any] = {}
        for key, value in STEP_INFO.items():
            per_agent = key in ("regret", "cumulative_regret")
            dtype = np.asarray(value).dtype
            infos[key] = be.asarray(np.full((b, n) if per_agent else b, value, dtype=dtype))
        self._instance_ids: np.ndarray | None = None
        self._add_instance(infos)
        return infos

    def _step_infos(self, step: CoreStep) -> dict[str, Any]:
        core, be = self.core, self.backend
        infos: dict[str, Any] = {
            "regret": step.regret,
            "cumulative_regret": be.copy(core.cum_regret),
            "peer_links": step.peer_links,
            "server_links": step.server_links,
            "comm_cost": step.cost,
            "cumulative_comm_cost": be.copy(core.cum_cost),
        }
        self._add_instance(infos)
        return infos

    def _add_instance(self, infos: dict[str, Any]) -> None:
        """Each env's instance id (a NumPy ``uint64`` array on every device: an id drawn
        on the host, not a quantity; made once an episode)."""
        if self.distribution is not None:
            ids_now: np.ndarray | None = getattr(self, "_instance_ids", None)
            if ids_now is None:
                ids = [-1 if i is None else i for i in self.core.instances]
                self._instance_ids = np.array(ids, dtype=np.uint64)
            assert self._instance_ids is not None
            infos["instance"] = self._instance_ids.copy()


class FederatedMABVecEnv(CoreVecEnv):
    """``num_envs`` federated MAB envs stepped as arrays (see the module docstring).

    Args:
        problem: A fixed instance, or a distribution each episode draws from.
        network: Communication graph (default complete).
        protocol: Delivery rule (default broadcast); each env gets its own copy.
        horizon: Steps per episode.
        message_dim: ``D`` (0: actions are bare arms).
        message_bounds: ``(low, high)`` of every message entry.
        link_costs: ``(c1, c2)``, Li & Song's server and peer link costs.
        split: The instance split of a distribution.
        num_envs: ``B``.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default) or ``DISABLED``.
        device: ``None`` (NumPy) or a torch device (:func:`~fedbandit_env.backend.backend`).
        validate: Check the actions' values every step (``None``: on NumPy only).

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.protocols import Broadcast
        >>> venv = FederatedMABVecEnv(conflicting(4, 3, seed=0), protocol=Broadcast(),
        ...                           horizon=5, message_dim=2, num_envs=8)
        >>> obs, infos = venv.reset(seed=0)
        >>> obs["messages"].shape, obs["mask"].shape
        ((8, 4, 2), (8, 4, 4))
        >>> obs, rewards, terms, truncs, infos = venv.step(
        ...     np.ones((8, 4), int), np.zeros((8, 4, 2)))
        >>> rewards.shape, infos["comm_cost"].tolist()[:2], bool(truncs.any())
        ((8, 4), [6.0, 6.0], False)
    """

    metadata: dict[str, Any] = {  # noqa: RUF012 (Gymnasium's VectorEnv attribute)
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": [],
        "name": "federated_mab_vec_v0",
    }

    def __init__(
        self,
        problem: MABProblem | ProblemDistribution,
        network: Network | nx.Graph | None = None,
        protocol: Protocol | None = None,
        horizon: int = 1000,
        message_dim: int = 0,
        message_bounds: tuple[float, float] = (-np.inf, np.inf),
        link_costs: tuple[float, float] = (25.0, 1.0),
        split: str = "train",
        num_envs: int = 1,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        device: Any = None,
        validate: bool | None = None,
    ) -> None:
        num_envs = check_int("num_envs", num_envs, 1)
        self.backend = be = backend(device)
        mode = autoreset_mode_of(autoreset_mode)
        if not isinstance(problem, MABProblem | ProblemDistribution):
            raise TypeError(
                "problem must be a MABProblem or a ProblemDistribution, "
                f"got {type(problem).__name__}"
            )
        n = problem.n_agents
        w = check_wiring(
            n, network, protocol, horizon, message_dim, message_bounds, link_costs, None, []
        )
        check_per_sender(w.protocol, w.message_dim)
        check_memory(
            num_envs * trial_bytes(n, problem.n_arms + w.message_dim),
            f"a batch of {num_envs} envs of N={n} agents and M={problem.n_arms} arms",
            "lower num_envs",
        )
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.num_envs = num_envs
        self.n_agents, self.n_arms = n, problem.n_arms
        self.horizon, self.message_dim = w.horizon, w.message_dim
        self.network, self.protocol = w.network, w.protocol
        self.message_bounds, self.link_costs = w.message_bounds, w.link_costs
        protocols = [copy.deepcopy(w.protocol) for _ in range(num_envs)]
        self.core = MABCore(
            problem, w.network, protocols, w.horizon, w.message_dim, w.message_bounds,
            w.link_costs, split, device=be,
        )  # fmt: skip
        self.validate = be.is_numpy if validate is None else bool(validate)
        self.distribution = self.core.distribution
        self._reward_bounds = self.core.problems[0].reward_bounds
        self.render_mode = None
        self._needs_reset = True

    # ------------------------------------------------------------------ spaces
    # Built when first read (a compiled rollout never reads them, and they cost more
    # than the rest of the constructor); Gymnasium's attributes as properties.
    @functools.cached_property
    def _joint(self) -> tuple[spaces.Dict, spaces.Space[Any]]:
        return joint_spaces(
            self.n_agents,
            self.n_arms,
            self.horizon,
            self._reward_bounds,
            self.message_dim,
            self.message_bounds,
            self.protocol,
        )

    rollout_observes: str | None = None
    """What a policy rolled out over this env reads of its rewards (``None``: the rewards
    themselves; a layer that changes them says what it hands out instead)."""

    # ------------------------------------------------------------------ helpers
    def _observations(self, routed: Routed | None) -> VecObs:
        core, be = self.core, self.backend
        b, n, d = self.num_envs, self.n_agents, self.message_dim
        obs: VecObs = {
            "arm": be.copy(core.last_arms),
            "reward": be.astype(core.last_rewards, be.float32)[..., None],
            "step": be.full((b, n, 1), core.t, be.float32),
        }
        if not d:
            return obs
        return self._with_messages(obs, routed)


__all__ = ["CoreVecEnv", "FederatedMABVecEnv", "VecObs", "autoreset_mode_of", "check_per_sender",
           "joint_spaces"]  # fmt: skip
