"""The federated multi-armed bandit written once, for ``B`` independent envs as arrays.

:class:`MABCore` holds ``B`` episodes of ``N`` agents and ``M`` arms: each env's
instance, generators and protocol, and the arrays of their state. Both views step it:

- :class:`~fedbandit_env.vector.FederatedMABVecEnv` (``B`` envs, arrays in and out);
- :class:`~fedbandit_env.envs.federated_mab.FederatedMABEnv`, the PettingZoo env, is a
  core with ``B = 1`` and a dict per agent around it.

So an env ``b`` of the vector env reset with seed ``s + b`` *is* the PettingZoo env
reset with seed ``s``: the same code draws the instance, the rewards and the messages.

Per env and episode, as the PettingZoo env always has: ``reset(seed)`` seeds the env's
master generator (``reset()`` continues it), spawns the reward and protocol generators
(``seeding.env_generators``) and draws the instance of a distribution
(:func:`~fedbandit_env.problems.distribution.draw_instance`). Rewards do not depend on
the arms through their random numbers (:func:`~fedbandit_env.problems.mab.noise_draws`),
so each env's numbers are drawn a block of steps ahead, read one row a step;
:func:`~fedbandit_env.problems.mab.rewards_of` turns them into rewards, the same
function :meth:`MABProblem.sample <fedbandit_env.problems.MABProblem.sample>` uses.
Messages go through a :class:`~fedbandit_env.core.routing.Router`.

**On any device.** Every array operation of a step goes through the backend's array
namespace (:mod:`fedbandit_env.backend`), so the same lines step NumPy arrays (the
default, and the replay reference: the PettingZoo env is this core on NumPy) and torch
tensors on a GPU (``device="cuda"``) or the CPU (``device="cpu"``). On a torch device
the instances are the same draws (drawn on the host from the same seeds, then moved),
while reward noise comes from one ``torch.Generator`` on the device, seeded from the
envs' seeds (:func:`~fedbandit_env.backend.seed_of`): the same distribution, other
numbers, and no host round-trip a step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from fedbandit_env.backend import Backend, DeviceStream, backend, seed_of
from fedbandit_env.core.actions import ActionChecks
from fedbandit_env.core.dispatch import SameTypes
from fedbandit_env.core.kernels import (
    WireChanges,
    observe_raw,
    rollout_block,
    rollout_block_counted,
    rollout_talking,
    rollout_talking_counted,
    runs_uncounted,
    step_envs,
)
from fedbandit_env.core.packed import packed_call
from fedbandit_env.core.rounds import (
    QuietSteps,
    rollout_flooding,
    rollout_flooding_counted,
    rollout_hybrid,
    rollout_hybrid_counted,
    rollout_rounds,
    rollout_rounds_counted,
)
from fedbandit_env.core.routing import Routed, Router
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.distribution import ProblemDistribution, check_pinned, draw_instance
from fedbandit_env.problems.kernels import NOISE_CODES
from fedbandit_env.problems.mab import MABProblem, noise_draws, rewards_of
from fedbandit_env.protocols.base import Protocol
from fedbandit_env.rng_kernels import fill_noise, generator_table
from fedbandit_env.seeding import env_streams, instance_seed
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray

BLOCK = 256
"""Steps of reward noise (and gossip edges) drawn ahead per env."""

ROLLOUT_NUMBERS = 1 << 15
"""Noise numbers a :meth:`MABCore.rollout` draws ahead at once (256 KiB of float64,
within a core's cache): a
block of ``max(block, ROLLOUT_NUMBERS // (B N))`` steps, so few envs still run long
stretches between Python calls (the numbers are the same whatever the block)."""


class RolloutStopped(RuntimeError):
    """:meth:`MABCore.rollout` was asked to stop between two blocks (its ``stop``); the
    steps played by then stand.

    Examples:
        >>> issubclass(RolloutStopped, RuntimeError)
        True
    """


@dataclass(eq=False, slots=True)
class CoreStep:
    """One step of ``B`` envs.

    Attributes:
        rewards: ``(B, N)`` each agent's local reward.
        regret: ``(B, N)`` pseudo-regret increments against the global means.
        routed: The delivery (``None`` without messages).
        peer_links, server_links: ``(B,)`` links used.
        cost: ``(B,)`` their cost ``c1 server + c2 peer``.
        done: Whether the episodes reached the horizon.

    Examples:
        >>> CoreStep(np.zeros((1, 2)), np.zeros((1, 2)), None, np.zeros(1, int),
        ...          np.zeros(1, int), np.zeros(1), False).done
        False
    """

    rewards: FloatArray
    regret: FloatArray
    routed: Routed | None
    peer_links: IntArray
    server_links: IntArray
    cost: FloatArray
    done: bool


class MABCore(ActionChecks):
    """``B`` federated MAB episodes as arrays (see the module docstring).

    Args:
        problem: A fixed instance, or a distribution every episode draws from.
        network: The communication graph (shared by every env).
        protocols: One protocol object per env (the PettingZoo view passes its own).
        horizon: Steps per episode.
        message_dim: ``D`` (0: no messages).
        message_bounds: ``(low, high)`` of every message entry.
        link_costs: ``(c1, c2)``.
        split: The instance split of a distribution (``"train"`` or ``"held_out"``).
        block: Steps of random numbers drawn ahead.
        device: Where the arrays live (:func:`~fedbandit_env.backend.backend`: ``None``
            for NumPy, or a torch device).

    Examples:
        >>> from fedbandit_env.protocols import Broadcast
        >>> core = MABCore(MABProblem([[0.2, 0.8], [0.6, 0.3]]), Network.complete(2),
        ...                [Broadcast(), Broadcast()], horizon=3, message_dim=1)
        >>> core.reset([7, 8])
        >>> step = core.step(np.array([[1, 0], [0, 0]]), np.zeros((2, 2, 1)))
        >>> step.rewards.shape, step.regret[1].round(2).tolist(), step.cost.tolist()
        ((2, 2), [0.15, 0.15], [1.0, 1.0])
    """

    compiled: bool = True
    """On NumPy, step through the compiled :func:`~fedbandit_env.core.kernels.step_envs`
    (``False``: the array statement, which a torch device always runs;
    ``tests/vector/test_core_step_kernel.py`` holds the two to the same bits)."""

    def __init__(
        self,
        problem: MABProblem | ProblemDistribution,
        network: Network,
        protocols: list[Protocol],
        horizon: int,
        message_dim: int = 0,
        message_bounds: tuple[float, float] = (-np.inf, np.inf),
        link_costs: tuple[float, float] = (25.0, 1.0),
        split: str = "train",
        block: int = BLOCK,
        device: Any = None,
    ) -> None:
        self.backend: Backend = backend(device)
        self.xp = self.backend.xp
        self.distribution = problem if isinstance(problem, ProblemDistribution) else None
        if isinstance(problem, ProblemDistribution):
            first = problem.sample(instance_seed(0, split))  # until the first reset
        else:
            first = problem
        self.n_envs = len(protocols)
        self.n_agents, self.n_arms = first.n_agents, first.n_arms
        self.network = network
        self.horizon = int(horizon)
        self.message_dim = int(message_dim)
        self.message_bounds = message_bounds
        self.link_costs = link_costs
        self.split = split
        self.block = max(1, int(block))
        self.router = Router(protocols, network, self.message_dim, self.backend)
        self._checked: Any = None  # the rows check_actions checks (None: every row)
        self._senders = np.arange(self.n_agents, dtype=np.int64)  # the same, on the host
        self._stream: DeviceStream | None = None if self.backend.is_numpy else self.backend.stream()
        b, n = self.n_envs, self.n_agents
        self.masters: list[np.random.Generator | None] = [None] * b
        self.reward_rngs: list[np.random.Generator] = [np.random.default_rng()] * b
        self._table: np.ndarray | None = None  # their generator_table (set at the first draw)
        self.problems: list[MABProblem] = [first] * b
        self.instances: list[int | None] = [None] * b
        be = self.backend
        self._set_arrays()
        self._clear()
        m = self.n_arms
        self._rows = be.asarray((np.arange(b * n, dtype=np.int64) * m).reshape(b, n))
        self._envs = be.asarray((np.arange(b, dtype=np.int64) * m)[:, None])
        self._no_links = be.zeros((b,), be.int64)
        self._no_cost = be.zeros((b,))
        if be.is_numpy:
            for constant in (self._no_links, self._no_cost):
                constant.flags.writeable = False

    def _clear(self) -> None:
        """An episode's empty totals, its first draws not yet taken."""
        be, b, n = self.backend, self.n_envs, self.n_agents
        self.t = 0
        self.cum_regret = be.zeros((b, n))
        self.cum_cost = be.zeros((b,))
        self.last_arms: IntArray = be.zeros((b, n), be.int64)
        self.last_rewards: FloatArray = be.zeros((b, n))
        self.last_routed: Routed | None = None
        self._draws = be.zeros((b, 0, n))
        self._offset = 0
        self._sent: FloatArray | None = None  # the rollouts' messages, kept between them

    # ------------------------------------------------------------------ episodes
    def reset(self, seeds: Sequence[int | None], options: dict[str, Any] | None = None) -> None:
        """Start every env's episode; env ``b`` reseeds its master generator with
        ``seeds[b]`` (``None``: continue it), as ``FederatedMABEnv.reset(seed)`` does."""
        if len(seeds) != self.n_envs:
            raise ValueError(f"one seed per env: {self.n_envs} envs, {len(seeds)} seeds")
        pinned = (options or {}).get("problem")
        protocol_rngs = []
        for k, seed in enumerate(seeds):
            master = self.masters[k]
            if seed is not None or master is None:
                master, _ = seeding.np_random(seed)
                self.masters[k] = master
            reward_rng, protocol_rng = env_streams(master)
            self.reward_rngs[k] = reward_rng
            self._table = None
            protocol_rngs.append(protocol_rng)
            if pinned is not None:
                self.problems[k] = check_pinned(pinned, self.distribution, self.problems[k])
                self.instances[k] = None
            elif self.distribution is not None:
                drawn = draw_instance(self.distribution, seed, self.split, master)
                self.problems[k], self.instances[k] = drawn
        self._set_arrays()
        if self._stream is not None:  # the device's draws: seeded from the envs' seeds
            start = seed_of(list(seeds))
            if start is not None:
                self._stream.seed(start)
        if self.message_dim:
            self.router.reset(protocol_rngs, self._stream)
        self._clear()

    def _set_arrays(self) -> None:
        problems, be = self.problems, self.backend
        self.means = be.asarray(np.stack([p.local_means for p in problems]))  # (B, N, M)
        self.gaps = be.asarray(np.stack([p.gaps for p in problems]))  # (B, M)
        self._flat_means = self.xp.reshape(self.means, (-1,))
        self._flat_gaps = self.xp.reshape(self.gaps, (-1,))
        self.sigma = be.asarray(np.array([p.sigma for p in problems])[:, None])  # (B, 1)
        kinds = [p.noise for p in problems]
        if be.is_numpy:  # the compiled step's: each env's noise code and scale
            self._kinds = np.array([NOISE_CODES[k] for k in kinds], dtype=np.int64)
            self._scales = np.ascontiguousarray(self.sigma[:, 0])
        self._groups = {
            k: be.asarray(np.flatnonzero([q == k for q in kinds])) for k in dict.fromkeys(kinds)
        }

    # ------------------------------------------------------------------ steps
    def step(self, arms: IntArray, messages: FloatArray | None = None) -> CoreStep:
        """Every agent of every env pulls ``arms[b, i]`` and sends ``messages[b, i]``.

        ``arms`` and ``messages`` must already be checked (the views check them).
        """
        if self.t >= self.horizon:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        if self._offset >= self._draws.shape[1]:
            self._refill()
        if self.backend.is_numpy and self.compiled:
            b, n = self.n_envs, self.n_agents
            rewards, regret = np.empty((b, n)), np.empty((b, n))
            step_envs(self.means, self.gaps, self._kinds, self._scales, arms, self._draws,
                      self._offset, rewards, regret, self.cum_regret)  # fmt: skip
            self._offset += 1
            self.t += 1
            return self._after(arms, rewards, regret, messages)
        draws = self._draws[:, self._offset]
        self._offset += 1
        pulled = self._flat_means[self._rows + arms]  # one gather: rows (b N + i) M
        if len(self._groups) == 1:
            (kind,) = self._groups
            rewards = rewards_of(pulled, draws, kind, self.sigma)
        else:
            rewards = self.backend.zeros(tuple(pulled.shape))
            for kind, rows in self._groups.items():
                rewards[rows] = rewards_of(pulled[rows], draws[rows], kind, self.sigma[rows])
        self.t += 1
        regret = self._flat_gaps[self._envs + arms]
        self.cum_regret += regret
        return self._after(arms, rewards, regret, messages)

    def _after(
        self, arms: IntArray, rewards: FloatArray, regret: FloatArray, messages: FloatArray | None
    ) -> CoreStep:
        """The rest of a step once the rewards are drawn: the messages routed and the
        links' cost."""
        self.last_arms, self.last_rewards = arms, rewards
        routed = None
        if self.message_dim:
            assert messages is not None
            routed = self.router.route(messages, self.t, self.horizon - self.t + 1)
            peer, server = routed.peer_links, routed.server_links
            be, f64 = self.backend, self.backend.float64
            cost = self.link_costs[0] * be.astype(server, f64) + self.link_costs[1] * be.astype(
                peer, f64
            )
            self.cum_cost += cost
        else:
            peer = server = self._no_links
            cost = self._no_cost
        self.last_routed = routed
        return CoreStep(rewards, regret, routed, peer, server, cost, self.t >= self.horizon)

    @property
    def rolls_out(self) -> bool:
        """Whether :meth:`rollout` plays this core: NumPy, and no messages or ones that go
        by ``Broadcast`` (every neighbour's row every step), ``RandomEdgeGossip`` (one
        edge's two rows a step, and with a public prefix every neighbour's prefix),
        ``NeighbourGossip`` (every agent's call, no public prefix), ``ServerRounds``
        (Li & Song's master-worker rounds: the server's broadcast), ``Flooding`` (their
        GIS rounds) or ``Hybrid`` (their hybrid structure).

        Examples:
            >>> from fedbandit_env.protocols import Broadcast
            >>> core = MABCore(MABProblem([[0.2, 0.8], [0.6, 0.3]]), Network.complete(2),
            ...                [Broadcast()], horizon=3, message_dim=2)
            >>> core.rolls_out
            True
        """
        if not self.backend.is_numpy:
            return False
        router = self.router
        plain = (
            router.kind in ("broadcast", "random_edge", "neighbour_calls")
            and (not router.public_dim or router.kind == "random_edge")
            and not router.has_server
        )
        rounds = router.kind in ("server_rounds", "flooding", "hybrid")
        return not self.message_dim or plain or rounds

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
        """Play the rest of every env's episode with a compiled policy step ``act`` and
        its arrays ``state`` (a :meth:`VectorPolicy.kernel
        <fedbandit_env.vector.policy.VectorPolicy.kernel>`: ``act(last_arms,
        last_rewards_f32, t, *state, arms_out)``, or with messages ``act(last_arms,
        last_rewards_f32, t, heard, mask, *state, arms_out, sent_out)``; with
        ``ServerRounds``, ``server`` and ``server_mask`` in place of ``heard`` and
        ``mask``, and so with ``Hybrid``), with no Python between steps:
        :func:`~fedbandit_env.core.kernels.rollout_block` (or
        :func:`~fedbandit_env.core.kernels.rollout_talking`,
        :func:`~fedbandit_env.core.rounds.rollout_rounds`,
        :func:`~fedbandit_env.core.rounds.rollout_flooding`,
        :func:`~fedbandit_env.core.rounds.rollout_hybrid`) over blocks of noise drawn
        as :meth:`step` draws it, so the episode is the one :meth:`step` plays for the
        same actions, to the bit, messages and link costs included. The cumulative regret
        at the recorded ``steps`` still ahead goes to ``out`` ``(B, N, len(steps))`` (the
        cumulative cost to ``cost_out`` ``(B, len(steps))``); ``trace`` ``(B, T, N)`` arms
        and float32 rewards keeps every step's. Where :attr:`rolls_out` is false, a
        ``ValueError``; a message the env would refuse raises its ``ValueError`` before
        that step. Afterwards ``last_rewards`` holds the last step's rewards, as
        :meth:`step` leaves them. ``stop`` is asked before each block (of
        ``max(block, 2**15 / (B N))`` steps); when it says so, :class:`RolloutStopped`
        (how Ctrl-C ends a batch of compiled trials in flight).

        A talking step may write only the message entries that moved and list them:
        a :class:`~fedbandit_env.core.kernels.WireChanges` last in ``state``, which the
        step fills. The rollout then hands the step the same ``sent`` every step and
        every rollout of the episode (what it wrote last stays), and checks and puts on
        the wire only the listed entries when they are few
        (:func:`~fedbandit_env.core.kernels.rollout_talking`; the round rollouts check
        only the listed entries, :func:`~fedbandit_env.core.rounds.refused`); the episode
        is the same. A talking step over ``ServerRounds``, ``Flooding`` or ``Hybrid`` may
        also plan the steps after it in which it sends nothing and knows its arms: a
        :class:`~fedbandit_env.core.rounds.QuietSteps` in its state (checked to fit the
        envs, ``ValueError`` else), whose steps the round rollouts play without calling
        it after a step with no round (:func:`~fedbandit_env.core.rounds.play_quiet`).

        ``observe = (hook, watch, seen)``: what the agents read of each step's rewards, for
        a layer over the env that changes it (``VecPrivateRewards.rollout``): after each
        step ``hook(arms, rewards, t, *watch, seen, traced)`` writes what the policy reads
        next into ``seen`` and the observation's reward (the one traced) into ``traced``
        (float32 ``(B, N)``), from the env's float64 rewards; ``seen`` is what the policy
        reads first. ``None``: the rewards as the env's observation holds them
        (:func:`~fedbandit_env.core.kernels.observe_raw`).

        Examples:
            >>> from numba import njit
            >>> from fedbandit_env.protocols import Broadcast
            >>> @njit
            ... def arm_0(last, seen, t, arms):
            ...     arms[:] = 0
            >>> core = MABCore(MABProblem([[0.2, 0.8], [0.6, 0.3]]), Network.complete(2),
            ...                [Broadcast(), Broadcast()], horizon=4)
            >>> core.reset([7, 8])
            >>> out = np.zeros((2, 2, 1))
            >>> core.rollout(arm_0, (), np.array([4]), out)
            >>> core.t, out[1].round(2).tolist()
            (4, [[0.6], [0.6]])
        """
        if not self.rolls_out:
            raise ValueError(
                "a compiled rollout plays NumPy envs without messages, or with Broadcast's, "
                "RandomEdgeGossip's, NeighbourGossip's, ServerRounds', Flooding's or Hybrid's"
            )
        b, n, d = self.n_envs, self.n_agents, self.message_dim
        last = np.array(self.backend.to_numpy(self.last_arms), dtype=np.int64)
        arms = last.copy()
        raw = np.array(self.backend.to_numpy(self.last_rewards), dtype=np.float64)
        if observe is None:
            seen = raw.astype(np.float32)
            hook, watch, traced = observe_raw, (), seen
        else:
            hook, watch, first_seen = observe
            seen = np.array(first_seen, dtype=np.float32, order="C")
            traced = np.zeros((b, n), np.float32)
        regret = np.empty((0, 0))  # not kept
        if trace is None:  # nothing traced
            trace = np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32)
        t_arms, t_rewards = trace
        r = int(np.searchsorted(steps, self.t, side="right"))  # records already passed
        ahead = max(self.block, ROLLOUT_NUMBERS // max(1, b * n))
        drawn = bool(d) and self.router.kind in ("random_edge", "neighbour_calls")
        rounds = bool(d) and self.router.kind == "server_rounds"
        floods = bool(d) and self.router.kind == "flooding"
        hybrid = bool(d) and self.router.kind == "hybrid"
        changes = state[-1] if d and state and isinstance(state[-1], WireChanges) else None
        if rounds or floods or hybrid:
            wire = (self._rounds_wire() if rounds else
                    self._flooding_wire() if floods else self._hybrid_wire())  # fmt: skip
            listing = np.zeros((b, 2, 0), np.int64), np.full(b, -1, np.int64)  # whole rows
            if changes is not None:  # the step lists its writes: only those are checked
                changes.check(b, n, d)
                listing = changes.changed, changes.listed
            quiet = next((part for part in state if isinstance(part, QuietSteps)), None)
            if quiet is None:  # a step that plans no quiet steps
                quiet = QuietSteps.of(1, b, n)
            quiet.check(b, n)
            wire = (*wire, *listing, quiet)
            kept = np.zeros((b, steps.size)) if cost_out is None else cost_out
        elif d:
            wire = self._wire()
            if changes is not None:  # the step lists its writes
                changes.check(b, n, d)
                wire = (*wire[:20], *changes)
            kept = np.zeros((b, steps.size)) if cost_out is None else cost_out
        silent: Any = rollout_block_counted
        talking: Any = rollout_talking_counted
        if rounds or floods or hybrid:
            talking = (rollout_rounds_counted if rounds else
                       rollout_flooding_counted if floods else rollout_hybrid_counted)  # fmt: skip
        step, stepped = act, state  # what the rollout calls (packed: `state` stays alive)
        if runs_uncounted((act, hook), (state, watch)):  # numba's runtime off (faster)
            silent = rollout_block
            talking = (rollout_rounds if rounds else rollout_flooding if floods else
                       rollout_hybrid if hybrid else rollout_talking)  # fmt: skip
            # a step marked packs_state takes its state as one buffer (core.packed)
            step, stepped = packed_call(act, state, 5 if d else 3, 2 if d else 1)
        # every block's arguments have the first block's types: numba types them once
        silent, talking = SameTypes(silent), SameTypes(talking)
        stopped = False
        while self.t < self.horizon:
            if stop is not None and stop():
                stopped = True
                break
            if self._offset >= self._draws.shape[1]:
                self._refill(ahead)
            start = self._offset
            args = (self.means, self.gaps, self._kinds, self._scales, self._draws, start,
                    self.t, last, arms, seen, regret, self.cum_regret)  # fmt: skip
            if not d:
                r = silent(step, stepped, *args, steps, r, out, t_arms, t_rewards, hook, watch,
                           raw, traced)  # fmt: skip
                end = self._draws.shape[1]
            else:
                record = (steps, r, out, kept, t_arms, t_rewards)
                if drawn:  # the protocol's draws of the block's steps, as route() draws
                    picks = self.router.take_draws(self._draws.shape[1] - start)
                    at = 11 if self.router.kind == "random_edge" else 14
                    wire = (*wire[:at], picks, *wire[at + 1 :])
                r, t = talking(step, stepped, *args, wire, record, hook, watch, raw, traced)
                end = start + t - self.t
                if drawn and t - self.t < picks.shape[1]:  # the draws of steps not played
                    self.router.untake_draws(picks[:, t - self.t :])
                if end < self._draws.shape[1] and t < self.horizon:  # a message refused
                    self.t, self._offset = t, end
                    self.last_arms, self.last_rewards = last, raw
                    if floods:  # the rounds in flight stay the protocols'
                        self._hand_back_floods(wire)
                    if hybrid:
                        self._hand_back_hybrid(wire)
                    if changes is not None:  # or the step's listing was wrong
                        changes.check(b, n, d)
                    self.check_actions(arms, wire[2])  # the env's own refusal, its message
                    if hybrid:  # Hybrid.route's refusal, before the step (step(): after it)
                        raise RuntimeError(
                            f"step {t + 1}: a hybrid round is still in flight; agents must "
                            "wait for the server's broadcast before starting another"
                        )
                    raise ValueError("a message outside the bounds the env declares")
            self.t += end - start
            self._offset = end
        self.last_arms, self.last_rewards = last, raw
        if rounds:  # the server's broadcast of the last step, as step() leaves it
            router, uploads = self.router, wire[8].copy()
            self.last_routed = Routed(np.zeros((b, n, d), np.float32),
                                      np.zeros((b, n, n), np.int8), router._no_links.copy(),
                                      uploads, None, wire[0], wire[1])  # fmt: skip
        elif floods:  # the rounds in flight back to the protocols; the last delivery
            self._hand_back_floods(wire)
        elif hybrid:
            self._hand_back_hybrid(wire)
        elif d:  # what the last step delivered, as step() leaves it
            router = self.router
            public = None
            if router.kind == "neighbour_calls":  # the last step's distinct pairs
                links = np.triu(wire[1]).sum(axis=(1, 2)).astype(np.int64)
            elif router.kind == "random_edge" and router.public_dim:
                links, public = router._gossip_links, router._adjacency_all
            else:
                links = router._one_link if router.kind == "random_edge" else router._edge_links
            self.last_routed = Routed(wire[0], wire[1], links, router._no_links, public)
        if stopped:  # the core is left as after those steps: a rollout or step goes on
            raise RolloutStopped(f"stopped after {self.t} of {self.horizon} steps")

    def _kept_sent(self) -> FloatArray:
        """The rollouts' messages ``(B, N, D)``, kept from rollout to rollout for a step
        that lists what it writes (:class:`~fedbandit_env.core.kernels.WireChanges`)."""
        if self._sent is None:
            self._sent = np.zeros((self.n_envs, self.n_agents, self.message_dim))
        return self._sent

    def _wire(self) -> tuple[Any, ...]:
        """:func:`~fedbandit_env.core.kernels.rollout_talking`'s ``wire``: what was
        heard last step (zeros before the first), the broadcast's graph, the gossip's
        edges (its picks filled in per block) and the link cost of a step as
        :meth:`step` adds it."""
        b, n, d = self.n_envs, self.n_agents, self.message_dim
        router = self.router
        if self.t and self.last_routed is not None:
            heard = np.array(self.last_routed.messages, dtype=np.float32, order="C")
            mask = np.array(self.last_routed.mask, dtype=np.int8, order="C")
        else:
            heard, mask = np.zeros((b, n, d), np.float32), np.zeros((b, n, n), np.int8)
        adjacency = np.ascontiguousarray(self.network.adjacency, dtype=np.int8)
        heard_by = np.ascontiguousarray(np.asarray(router._heard), dtype=np.bool_)
        links = {"random_edge": 1.0, "neighbour_calls": 0.0}.get(
            router.kind, float(self.network.n_edges)
        )  # neighbour calls: link_cost per distinct pair, added by the kernel
        if router.kind == "random_edge" and router.public_dim:
            links += float(self.network.n_edges)  # the public prefix uses every edge
        base = float(self.link_costs[0] * 0.0)
        cost = (
            base if router.kind == "neighbour_calls" else float(base + self.link_costs[1] * links)
        )
        lo, hi = self.message_bounds
        checked = np.zeros(n, dtype=np.bool_)
        checked[self._senders] = True  # every agent but an admitted forger
        edges = np.ascontiguousarray(np.asarray(router._edges), dtype=np.int64).reshape(-1, 2)
        neighbors = np.ascontiguousarray(self.network.neighbors, dtype=np.int64)
        degrees = np.ascontiguousarray(self.network.degrees, dtype=np.int64)
        return (heard, mask, self._kept_sent(), adjacency, heard_by, checked,
                float(lo), float(hi), cost, self.cum_cost, edges,
                np.zeros((b, 0), np.int64), neighbors, degrees, np.zeros((b, 0, n)),
                float(self.link_costs[1]), int(router.public_dim),
                np.zeros((b, n), np.bool_), np.zeros(b), np.zeros((b, n), np.int64),
                np.zeros((b, 2, 0), np.int64), np.full(b, -1, np.int64))  # fmt: skip

    def _rounds_wire(self) -> tuple[Any, ...]:
        """:func:`~fedbandit_env.core.rounds.rollout_rounds`' ``wire``: what the server
        broadcast last step (zeros before the first), the uploads of that step, the
        protocols' rates and generators (the router's), the bounds and the senders
        checked."""
        b, n, d = self.n_envs, self.n_agents, self.message_dim
        router, last = self.router, self.last_routed
        if self.t and last is not None and last.server is not None:
            server = np.array(last.server, dtype=np.float32, order="C")
            server_mask = np.array(last.server_mask, dtype=np.int8, order="C")
            uploads = np.array(last.server_links, dtype=np.int64)
        else:
            server, server_mask = np.zeros((b, n, d), np.float32), np.zeros((b, n, 1), np.int8)
            uploads = np.zeros(b, np.int64)
        lo, hi = self.message_bounds
        checked = np.zeros(n, dtype=np.bool_)
        checked[self._senders] = True  # every agent but an admitted forger
        return (server, server_mask, self._kept_sent(), checked, float(lo), float(hi),
                np.ascontiguousarray(router._rates, dtype=np.float64), router._table, uploads,
                self.cum_cost, float(self.link_costs[0]), np.zeros(n, np.int64),
                np.zeros(n, np.bool_), np.zeros(max(0, d - 1)))  # fmt: skip

    def _flooding_wire(self) -> tuple[Any, ...]:
        """:func:`~fedbandit_env.core.rounds.rollout_flooding`'s ``wire``: what the last
        step delivered (zeros before the first), the graph's hop distances, eccentricities
        and edges, the link costs, and the rounds each env's ``Flooding`` holds in flight
        (:meth:`Flooding.in_flight <fedbandit_env.protocols.Flooding.in_flight>`) as the
        ring of upload steps."""
        b, n, d = self.n_envs, self.n_agents, self.message_dim
        last = self.last_routed
        if self.t and last is not None:
            heard = np.array(last.messages, dtype=np.float32, order="C")
            mask = np.array(last.mask, dtype=np.int8, order="C")
            peer = np.array(last.peer_links, dtype=np.int64)
        else:
            heard, mask = np.zeros((b, n, d), np.float32), np.zeros((b, n, n), np.int8)
            peer = np.zeros(b, np.int64)
        hops = np.ascontiguousarray(self.network.hop_distances, dtype=np.int64)
        reach = np.ascontiguousarray(hops.max(axis=0), dtype=np.int64)
        ring = max(1, int(reach.max()))
        starts = np.full((b, ring), -1, np.int64)
        origins = np.zeros((b, ring, n), np.bool_)
        payload = np.zeros((b, ring, n, d))
        for k, protocol in enumerate(self.router.protocols):
            for flagged, messages, slots in protocol.in_flight():  # type: ignore[attr-defined]
                start = self.t - slots + 1  # the step of its upload
                starts[k, start % ring] = start
                origins[k, start % ring] = flagged
                payload[k, start % ring] = messages
        lo, hi = self.message_bounds
        checked = np.zeros(n, dtype=np.bool_)
        checked[self._senders] = True  # every agent but an admitted forger
        edges = np.ascontiguousarray(self.network.edges, dtype=np.int64).reshape(-1, 2)
        return (heard, mask, self._kept_sent(), checked, float(lo), float(hi), hops, reach,
                edges, float(self.link_costs[0]), float(self.link_costs[1]), self.cum_cost,
                peer, starts, origins, payload, np.ones(b, np.int8), np.zeros(n, np.bool_),
                np.zeros(edges.shape[0], np.bool_))  # fmt: skip

    def _hand_back_floods(self, wire: tuple[Any, ...]) -> None:
        """After a flooding rollout, each env's ``Flooding`` holds the rounds still in the
        ring (:meth:`Flooding.resume <fedbandit_env.protocols.Flooding.resume>`), oldest
        first, so :meth:`step` goes on routing them; ``last_routed`` is what the last step
        delivered, as :meth:`step` leaves it."""
        self.last_routed = Routed(wire[0], wire[1], wire[12].copy(), self.router._no_links)
        starts, origins, payload = wire[13], wire[14], wire[15]
        for k, protocol in enumerate(self.router.protocols):
            live = sorted(int(u) for u in starts[k] if u >= 0)
            rounds = [(origins[k, u % starts.shape[1]].copy(),
                       payload[k, u % starts.shape[1]].copy(), self.t - u + 1)
                      for u in live]  # fmt: skip
            protocol.resume(rounds)  # type: ignore[attr-defined]

    def _hybrid_wire(self) -> tuple[Any, ...]:
        """:func:`~fedbandit_env.core.rounds.rollout_hybrid`'s ``wire``: what the server
        broadcast last step (zeros before the first) and the last step's links, the sinks
        and each agent's next hop towards its own (the protocols'), the link costs, and
        the round each env's ``Hybrid`` holds in flight
        (:meth:`Hybrid.in_flight <fedbandit_env.protocols.Hybrid.in_flight>`)."""
        b, n, d = self.n_envs, self.n_agents, self.message_dim
        last, protocols = self.last_routed, self.router.protocols
        peer, up = np.zeros(b, np.int64), np.zeros(b, np.int64)
        server, server_mask = np.zeros((b, n, d), np.float32), np.zeros((b, n, 1), np.int8)
        if self.t and last is not None and last.server is not None:
            server = np.array(last.server, dtype=np.float32, order="C")
            server_mask = np.array(last.server_mask, dtype=np.int8, order="C")
            peer = np.array(last.peer_links, dtype=np.int64)
            up = np.array(last.server_links, dtype=np.int64)
        first: Any = protocols[0]
        sinks = np.ascontiguousarray(first.sinks, dtype=np.int64)
        q = sinks.size
        live = np.zeros(b, np.int8)
        payload, members = np.zeros((b, n, max(0, d - 1))), np.zeros((b, q, n), np.bool_)
        at, uploaded = np.full((b, n), -1, np.int64), np.zeros((b, q), np.bool_)
        sink_means, sink_counts = np.zeros((b, q, max(0, d - 1))), np.zeros((b, q))
        for k, protocol in enumerate(protocols):
            held = protocol.in_flight()  # type: ignore[attr-defined]
            if held is not None:
                live[k] = 1
                payload[k], members[k], at[k], uploaded[k], sink_means[k], sink_counts[k] = held
        lo, hi = self.message_bounds
        checked = np.zeros(n, dtype=np.bool_)
        checked[self._senders] = True  # every agent but an admitted forger
        broadcast = server_mask.reshape(b, -1).any(axis=1).astype(np.int8)
        return (server, server_mask, self._kept_sent(), checked, float(lo), float(hi),
                np.ascontiguousarray(first._parent, dtype=np.int64),
                np.ascontiguousarray(first._component, dtype=np.int64), sinks,
                float(self.link_costs[0]), float(self.link_costs[1]), self.cum_cost, peer, up,
                live, payload, members, at, uploaded, sink_means, sink_counts, broadcast,
                np.zeros(n, np.bool_), np.zeros(max(0, d - 1)))  # fmt: skip

    def _hand_back_hybrid(self, wire: tuple[Any, ...]) -> None:
        """After a hybrid rollout, each env's ``Hybrid`` holds its round in flight
        (:meth:`Hybrid.resume <fedbandit_env.protocols.Hybrid.resume>`); ``last_routed``
        is what the last step delivered, as :meth:`step` leaves it."""
        b, n, d = self.n_envs, self.n_agents, self.message_dim
        self.last_routed = Routed(np.zeros((b, n, d), np.float32), np.zeros((b, n, n), np.int8),
                                  wire[12].copy(), wire[13].copy(), None, wire[0],
                                  wire[1])  # fmt: skip
        live = wire[14]
        for k, protocol in enumerate(self.router.protocols):
            held = tuple(part[k].copy() for part in wire[15:21]) if live[k] else None
            protocol.resume(held)  # type: ignore[attr-defined]

    def _refill(self, block: int | None = None) -> None:
        """Draw the next block of every env's reward noise (in each stream's order; on a
        torch device from its generator, uniforms or normals by each env's noise):
        ``block`` steps (default ``self.block``), not past the horizon."""
        size = max(1, min(block or self.block, self.horizon - self.t))
        if self._stream is not None:
            draws = self.backend.zeros((self.n_envs, size, self.n_agents))
            for kind, rows in self._groups.items():
                shape = (int(rows.shape[0]), size, self.n_agents)
                fresh = self._stream.uniform(shape) if kind == "bernoulli" else None
                draws[rows] = self._stream.normal(shape) if fresh is None else fresh
            self._draws, self._offset = draws, 0
            return
        draws = np.empty((self.n_envs, size, self.n_agents))
        if self.compiled:  # each stream's numbers, drawn in compiled code (rng_kernels)
            if self._table is None:  # addresses of reward_rngs, which keeps them alive
                self._table = generator_table(self.reward_rngs)
            fill_noise(self._table, self._kinds, draws)
        else:
            for k, rng in enumerate(self.reward_rngs):
                draws[k] = noise_draws(rng, self.problems[k].noise, (size, self.n_agents))
        self._draws, self._offset = draws, 0


__all__ = ["BLOCK", "CoreStep", "MABCore", "RolloutStopped"]
