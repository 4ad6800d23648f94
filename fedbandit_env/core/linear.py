"""The federated linear contextual bandit written once, for ``B`` independent envs.

:class:`LinearCore` is the linear bandit's counterpart of
:class:`~fedbandit_env.core.mab.MABCore`: it holds ``B`` episodes of ``N`` agents, each
env's instance (a :class:`~fedbandit_env.problems.linear.LinearProblem`), its
generators and its protocol, and the arrays of their state. The PettingZoo env
:class:`~fedbandit_env.envs.federated_linear.FederatedLinearEnv` is a core with
``B = 1`` and a dict per agent around it, so the rewards, the decision sets, the regret
and the messages of an episode are drawn by this code alone.

Per env and episode (the order of Dubey & Pentland's protocol, Algorithm 1: every agent
sees its decision set, chooses, is rewarded, and the messages go out):

- ``reset(seed)`` seeds the env's master generator (``reset()`` continues it) and
  spawns, in this order, the rewards', the protocol's and the decision sets' generators
  (:func:`~fedbandit_env.seeding.env_streams` with ``linear=True``); an env built from a
  sampler then draws its instance from the seed (or, unseeded, from a number its master
  draws next: :func:`~fedbandit_env.seeding.instance_seed`); the first decision sets are
  drawn;
- ``step(arms, messages)``: agent ``i`` of env ``b`` chose vector ``arms[b, i]`` of its
  set (pool row ``sets[b, i, arms[b, i]]``); its reward ``<x, theta_i> + noise`` and its
  pseudo-regret ``max_{x' in D} <x', theta> - <x, theta>`` against the global ``theta``,
  and the next sets unless the episode ended, for every env in one compiled call
  (:func:`~fedbandit_env.core.kernels.step_linear_envs`; instances of different pool
  sizes step env by env, :func:`~fedbandit_env.core.kernels.pull_sets`, with the same
  numbers); the messages go through a :class:`~fedbandit_env.core.routing.Router`;
- ``rollout(act, state, ...)``: the rest of every env's episode with a linear vector
  policy's compiled step and no Python between steps
  (:func:`~fedbandit_env.core.kernels.rollout_linear`, and
  :func:`~fedbandit_env.core.kernels.rollout_linear_sync` routing Synchronize's rounds),
  the same episode ``step`` plays for the same arms, where the envs carry no messages
  or Synchronize's and their pools stack.

On NumPy only (the linear env has no device path yet).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from fedbandit_env.backend import backend
from fedbandit_env.core.actions import ActionChecks
from fedbandit_env.core.dispatch import SameTypes
from fedbandit_env.core.hops import hop_table, rollout_linear_hops
from fedbandit_env.core.kernels import (
    LinearEnvArrays,
    gather_contexts,
    pull_sets,
    rollout_linear,
    rollout_linear_sync,
    step_linear_envs,
)
from fedbandit_env.core.mab import ROLLOUT_NUMBERS, CoreStep, RolloutStopped
from fedbandit_env.core.routing import Routed, Router
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.protocols.base import Protocol
from fedbandit_env.protocols.gamma_hops import GammaHops
from fedbandit_env.protocols.sync import Synchronize
from fedbandit_env.rng_kernels import generator_table
from fedbandit_env.seeding import env_streams, instance_seed
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray

LinearSampler = Callable[[np.random.Generator], LinearProblem]
"""``rng -> LinearProblem``: an instance distribution (one draw per ``reset(seed)``)."""

ProblemCheck = Callable[[LinearProblem, str], None]
"""``(problem, what) -> None``: raises if a drawn instance does not fit its env (the
view's observation space), ``what`` naming it in the message."""


def _no_check(problem: LinearProblem, what: str) -> None:
    """Every instance fits."""


def draw_problem(sampler: LinearSampler, seed: np.random.SeedSequence) -> LinearProblem:
    """``sampler``'s instance for the instance seed ``seed`` (a ``TypeError`` if it is no
    :class:`~fedbandit_env.problems.linear.LinearProblem`).

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> draw_problem(lambda rng: dubey_synthetic(2, seed=int(rng.integers(9))),
        ...              instance_seed(0, "train")).n_agents
        2
    """
    problem = sampler(np.random.default_rng(seed))
    if not isinstance(problem, LinearProblem):
        raise TypeError(f"the sampler must return a LinearProblem, got {problem!r}")
    return problem


def first_problem(
    problem: LinearProblem | LinearSampler, split: str
) -> tuple[LinearProblem, LinearSampler | None]:
    """``(instance, sampler)`` of a linear env's ``problem`` argument: a fixed instance and
    no sampler, or a sampler and its draw for instance seed 0 (what the env is built
    around until the first reset); a ``TypeError`` for anything else.

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> p = dubey_synthetic(2, seed=0)
        >>> first_problem(p, "train") == (p, None)
        True
    """
    if isinstance(problem, LinearProblem):
        return problem, None
    if callable(problem):
        return draw_problem(problem, instance_seed(0, split)), problem
    raise TypeError(f"problem must be a LinearProblem or a sampler, got {type(problem).__name__}")


class LinearCore(ActionChecks):
    """``B`` federated linear bandit episodes as arrays (see the module docstring).

    Args:
        problem: A fixed instance, or a sampler every seeded episode draws one from.
        network: The communication graph (shared by every env).
        protocols: One protocol object per env (the PettingZoo view passes its own).
        horizon: Steps per episode.
        message_dim: ``D`` (0: no messages).
        message_bounds: ``(low, high)`` of every message entry.
        link_costs: ``(c1, c2)``: a server link's cost and a peer link's.
        split: The instance split of a sampler (``"train"`` or ``"held_out"``).
        check: Called on every instance a sampler draws before the episode uses it
            (the view refuses contexts beyond its space there).

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> from fedbandit_env.protocols import Broadcast
        >>> core = LinearCore(dubey_synthetic(2, set_size=3, dim=2, seed=0),
        ...                   Network.complete(2), [Broadcast(), Broadcast()], horizon=2,
        ...                   message_dim=1)
        >>> core.reset([7, 8])
        >>> core.sets.shape
        (2, 2, 3)
        >>> step = core.step(np.zeros((2, 2), int), np.zeros((2, 2, 1)))
        >>> step.rewards.shape, step.cost.tolist(), bool((step.regret >= 0).all())
        ((2, 2), [1.0, 1.0], True)
    """

    def __init__(
        self,
        problem: LinearProblem | LinearSampler,
        network: Network,
        protocols: list[Protocol],
        horizon: int,
        message_dim: int = 0,
        message_bounds: tuple[float, float] = (-np.inf, np.inf),
        link_costs: tuple[float, float] = (25.0, 1.0),
        split: str = "train",
        check: ProblemCheck = _no_check,
    ) -> None:
        self.split, self.check = split, check
        problem, self.sampler = first_problem(problem, split)  # a draw: until the first reset
        self.n_envs = len(protocols)
        self.n_agents, self.set_size, self.dim = problem.n_agents, problem.set_size, problem.dim
        self.n_arms = self.set_size  # an agent's choices: a vector of its set
        self.backend = backend(None)
        self.xp = self.backend.xp
        self._checked: Any = None  # every agent's message checked (admit_forgers)
        self._senders = np.arange(self.n_agents, dtype=np.int64)
        self.network, self.horizon = network, int(horizon)
        self.message_dim, self.message_bounds = int(message_dim), message_bounds
        self.link_costs = link_costs
        self.router = Router(protocols, network, self.message_dim)
        gammas = {p.gamma if isinstance(p, GammaHops) else 0 for p in protocols}
        self.gamma = gammas.pop() if self.message_dim and len(gammas) == 1 else 0
        """Every env's ``GammaHops.gamma`` where they all go by GammaHops with one
        ``gamma`` (:func:`~fedbandit_env.core.hops.rollout_linear_hops` routes them),
        else 0."""
        self._hops = hop_table(network, self.gamma) if self.gamma else None
        b = self.n_envs
        self.masters: list[np.random.Generator | None] = [None] * b
        self.problems: list[LinearProblem] = [problem] * b
        self.instances: list[int | None] = [None] * b
        first = env_streams(np.random.default_rng(0), linear=True)  # until a reset
        self.reward_rngs: list[np.random.Generator] = [first[0]] * b
        self.set_rngs: list[np.random.Generator] = [first[2]] * b
        self._agents = np.arange(self.n_agents)
        self._no_links, self._no_cost = np.zeros(b, dtype=np.int64), np.zeros(b)
        for constant in (self._no_links, self._no_cost):
            constant.flags.writeable = False
        self._clear()
        self._stack()

    def draw(self, seed: np.random.SeedSequence) -> LinearProblem:
        """The sampler's instance for ``seed`` (:func:`draw_problem`)."""
        assert self.sampler is not None
        return draw_problem(self.sampler, seed)

    def _clear(self) -> None:
        """An episode's empty totals."""
        b, n = self.n_envs, self.n_agents
        self.t = 0
        self.cum_regret: FloatArray = np.zeros((b, n))
        self.cum_cost: FloatArray = np.zeros(b)
        self.last_arms: IntArray = np.zeros((b, n), dtype=np.int64)
        self.last_rewards: FloatArray = np.zeros((b, n))
        self.last_regret: FloatArray = np.zeros((b, n))
        self.last_routed: Routed | None = None
        # what the server sent after the last step of a rollout (step t, server, synced)
        self._rolled: tuple[int, Float32Array, np.ndarray] | None = None
        # under GammaHops, what every agent sent at its last gamma steps (step s at s % gamma)
        self._ring = np.zeros((b, max(self.gamma, 1), n, self.message_dim), np.float32)
        self.sets: IntArray = np.zeros((b, n, self.set_size), dtype=np.int64)

    # ------------------------------------------------------------------ episodes
    def reset(self, seeds: Sequence[int | None], options: dict[str, Any] | None = None) -> None:
        """Start every env's episode; env ``b`` reseeds its master generator with
        ``seeds[b]`` (``None``: continue it), as ``FederatedLinearEnv.reset(seed)`` does.
        ``options["problem"]`` pins every env's instance (checked by the view)."""
        if len(seeds) != self.n_envs:
            raise ValueError(f"one seed per env: {self.n_envs} envs, {len(seeds)} seeds")
        pinned = (options or {}).get("problem")
        protocol_rngs = []
        for k, seed in enumerate(seeds):
            master = self.masters[k]
            if seed is not None or master is None:
                master, _ = seeding.np_random(seed)
                self.masters[k] = master
            rewards, protocol, sets = env_streams(master, linear=True)
            self.reward_rngs[k], self.set_rngs[k] = rewards, sets
            protocol_rngs.append(protocol)
            self.instances[k] = None
            if pinned is not None:
                self.problems[k] = pinned
            elif self.sampler is not None:
                s = int(master.integers(2**63)) if seed is None else seed
                problem = self.draw(instance_seed(s, self.split))
                shape = (problem.n_agents, problem.set_size, problem.dim)
                if shape != (self.n_agents, self.set_size, self.dim):
                    raise ValueError(
                        f"the sampler drew a problem of {shape[0]} agents, set size {shape[1]} "
                        f"and dimension {shape[2]} for seed {s}; this env's are "
                        f"{(self.n_agents, self.set_size, self.dim)}"
                    )
                self.check(problem, f"the problem drawn for seed {s}")
                self.problems[k], self.instances[k] = problem, s
        if self.message_dim:
            self.router.reset(protocol_rngs)
        self._clear()
        for k in range(self.n_envs):
            self.sets[k] = self.problems[k].draw_sets(self.set_rngs[k])
        self._stack()

    def _stack(self) -> None:
        """The episode's instances as stacked arrays for the compiled step
        (:func:`~fedbandit_env.core.kernels.step_linear_envs`), and the generator tables
        it draws from (the generators stay alive in ``reward_rngs`` / ``set_rngs``);
        instances of different pool sizes step env by env instead."""
        problems, b = self.problems, self.n_envs
        converted: dict[int, np.ndarray] = {}  # one float32 pool per distinct instance
        for p in problems:
            if id(p) not in converted:
                converted[id(p)] = p.features.astype(np.float32)
        self._features32 = [converted[id(p)] for p in problems]
        pools = {p.n_features for p in problems}
        self._stacked = len(pools) == 1
        if not self._stacked:
            return
        first = problems[0]
        if len(converted) == 1:  # one instance for every env: read-only views, no copies
            self._local = np.broadcast_to(first.local_means, (b, *first.local_means.shape))
            self._global = np.broadcast_to(first.global_means, (b, first.n_features))
            self._all_features32 = np.broadcast_to(self._features32[0], (b, *first.features.shape))
            self._pools = self._features32[0][None]  # (1, P, d): every env's pool
            self._pool_of = np.zeros(b, dtype=np.int64)
        else:
            self._local = np.stack([p.local_means for p in problems])  # (B, N, P)
            self._global = np.stack([p.global_means for p in problems])  # (B, P)
            self._all_features32 = np.stack(self._features32)  # (B, P, d)
            self._pools, self._pool_of = self._all_features32, np.arange(b, dtype=np.int64)
        self._noise = np.array([p.noise_code for p in problems], dtype=np.int64)
        self._sigma = np.array([float(p.sigma) for p in problems])
        self._codes = np.array([p.draw_code for p in problems], dtype=np.int64)
        self._tops = np.array([p.top_rows for p in problems], dtype=np.int64)
        # the tables hold addresses, not references: keep the generators they were made
        # of alive with them (a reset replaces reward_rngs / set_rngs entry by entry)
        self._table_owners = (list(self.reward_rngs), list(self.set_rngs))
        self._reward_table = generator_table(self._table_owners[0])
        self._set_table = generator_table(self._table_owners[1])

    # ------------------------------------------------------------------ steps
    def step(self, arms: IntArray, messages: FloatArray | None = None) -> CoreStep:
        """Agent ``i`` of env ``b`` chooses vector ``arms[b, i]`` of its decision set and
        sends ``messages[b, i]`` (both already checked by the view).

        Examples:
            >>> from fedbandit_env.problems.linear import dubey_synthetic
            >>> from fedbandit_env.protocols import Broadcast
            >>> core = LinearCore(dubey_synthetic(2, set_size=3, dim=2, seed=0),
            ...                   Network.complete(2), [Broadcast()], horizon=1)
            >>> core.reset([0])
            >>> core.step(np.zeros((1, 2), int)).done, core.t
            (True, 1)
        """
        if self.t >= self.horizon:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        b, n = self.n_envs, self.n_agents
        rewards, regret = np.empty((b, n)), np.zeros((b, n))
        done = self.t + 1 >= self.horizon
        if self._stacked:  # every env at once, the next sets drawn in the same call
            step_linear_envs(self._local, self._global, self._noise, self._sigma,
                             self._reward_table, arms, self.sets, rewards, regret,
                             self._set_table, self._codes, self._tops,
                             not done)  # fmt: skip
        else:
            for k in range(b):
                problem, sets = self.problems[k], self.sets[k]
                pull_sets(problem.local_means, sets[self._agents, arms[k]], problem.noise_code,
                          float(problem.sigma), self.reward_rngs[k], sets,
                          problem.global_means, rewards[k], regret[k])  # fmt: skip
                if not done:
                    self.sets[k] = problem.draw_sets(self.set_rngs[k])
        self.t += 1
        self.cum_regret += regret
        self.last_arms, self.last_rewards, self.last_regret = arms, rewards, regret
        routed = None
        if self.message_dim:
            assert messages is not None
            routed = self.router.route(messages, self.t, self.horizon - self.t + 1)
            if self.gamma:  # what a rollout would go on from
                self._ring[:, self.t % self.gamma] = messages
            peer, server = routed.peer_links, routed.server_links
            cost = self.link_costs[0] * server + self.link_costs[1] * peer  # float64
            self.cum_cost += cost
        else:
            peer = server = self._no_links
            cost = self._no_cost
        self.last_routed, self._rolled = routed, None
        return CoreStep(rewards, regret, routed, peer, server, cost, done)

    def contexts(self, k: int = 0) -> np.ndarray:
        """Env ``k``'s decision sets as vectors ``(N, K, d)`` float32 (what its agents
        observe).

        Examples:
            >>> from fedbandit_env.problems.linear import dubey_synthetic
            >>> from fedbandit_env.protocols import Broadcast
            >>> core = LinearCore(dubey_synthetic(2, set_size=3, dim=2, seed=0),
            ...                   Network.complete(2), [Broadcast()], horizon=1)
            >>> core.reset([0]); core.contexts().shape
            (2, 3, 2)
        """
        return self._features32[k][self.sets[k]]

    def all_contexts(self) -> np.ndarray:
        """Every env's decision sets as vectors ``(B, N, K, d)`` float32 (one gather).

        Examples:
            >>> from fedbandit_env.problems.linear import dubey_synthetic
            >>> from fedbandit_env.protocols import Broadcast
            >>> core = LinearCore(dubey_synthetic(2, set_size=3, dim=2, seed=0),
            ...                   Network.complete(2), [Broadcast()] * 4, horizon=1)
            >>> core.reset([0, 1, 2, 3]); core.all_contexts().shape
            (4, 2, 3, 2)
        """
        if not self._stacked:
            return np.stack([self.contexts(k) for k in range(self.n_envs)])
        out = np.empty((*self.sets.shape, self.dim), np.float32)
        return gather_contexts(self._all_features32, self.sets, out)

    # ------------------------------------------------------------------ rollouts
    @property
    def synchronizes(self) -> bool:
        """Whether every env's messages go by :class:`~fedbandit_env.protocols.Synchronize`
        (a compiled rollout routes them itself:
        :func:`~fedbandit_env.core.kernels.rollout_linear_sync`).

        Examples:
            >>> from fedbandit_env.problems.linear import dubey_synthetic
            >>> from fedbandit_env.protocols import Synchronize
            >>> LinearCore(dubey_synthetic(2, set_size=3, dim=2, seed=0), Network.complete(2),
            ...            [Synchronize()], horizon=2, message_dim=10).synchronizes
            True
        """
        return bool(self.message_dim) and {type(p) for p in self.router.protocols} == {Synchronize}

    @property
    def rolls_out(self) -> bool:
        """Whether :meth:`rollout` plays these envs: no messages, Synchronize's or
        GammaHops' (one ``gamma``), and pools of one size (their instances stack).

        Examples:
            >>> from fedbandit_env.problems.linear import dubey_synthetic
            >>> from fedbandit_env.protocols import Broadcast
            >>> p = dubey_synthetic(2, set_size=3, dim=2, seed=0)
            >>> LinearCore(p, Network.complete(2), [Broadcast()], horizon=2).rolls_out
            True
            >>> LinearCore(p, Network.complete(2), [Broadcast()], horizon=2,
            ...            message_dim=1).rolls_out
            False
        """
        return bool(self._stacked and (not self.message_dim or self.synchronizes or self.gamma))

    def rollout_arrays(self) -> tuple[Float32Array, IntArray]:
        """What a compiled linear step reads its decision sets from: the float32 pools
        ``(U, P, d)`` (C-ordered; one where every env shares its instance) and each env's
        pool ``(B,)``; env ``b``'s agent ``i`` chooses among ``pools[pool_of[b]][sets[b,
        i]]``, the vectors :meth:`all_contexts` gives.

        Examples:
            >>> from fedbandit_env.problems.linear import dubey_synthetic
            >>> from fedbandit_env.protocols import Broadcast
            >>> core = LinearCore(dubey_synthetic(2, set_size=3, dim=2, seed=0),
            ...                   Network.complete(2), [Broadcast()] * 3, horizon=2)
            >>> core.reset([0, 1, 2])
            >>> pools, pool_of = core.rollout_arrays()
            >>> pools.shape[0], pool_of.tolist()  # one fixed instance for the three
            (1, [0, 0, 0])
        """
        if not self._stacked:
            raise ValueError("the envs' pools differ in size: they do not stack")
        return self._pools, self._pool_of

    def _env_arrays(self) -> LinearEnvArrays:
        """The stacked instances, generator tables and pools the rollouts step with."""
        pools, pool_of = self.rollout_arrays()
        return LinearEnvArrays(self._local, self._global, self._noise, self._sigma,
                               self._reward_table, self._set_table, self._codes,
                               self._tops, pools, pool_of)  # fmt: skip

    def rollout(
        self,
        act: Any,
        state: tuple[Any, ...],
        steps: IntArray,
        out: FloatArray,
        trace: tuple[IntArray, Float32Array] | None = None,
        cost_out: FloatArray | None = None,
        stop: Callable[[], bool] | None = None,
        observe: Any = None,
    ) -> None:
        """Play the rest of every env's episode with a linear vector policy's compiled
        step ``act`` and its arrays ``state`` (``act(last_arms, last_rewards_f32, t,
        pools, pool_of, sets, *state, arms_out)``; :meth:`rollout_arrays` says what the
        pools are), with no Python between steps
        (:func:`~fedbandit_env.core.kernels.rollout_linear`): the episode :meth:`step`
        plays for the same arms, to the bit. The cumulative regret at the recorded
        ``steps`` still ahead goes to ``out`` ``(B, N, len(steps))``; ``trace`` ``(B, T,
        N)`` arms and float32 rewards keeps every step's; the cumulative cost goes to
        ``cost_out`` ``(B, len(steps))``. ``stop`` is asked before each block of
        ``max(1, 2**15 / (B N))`` steps; when it says so,
        :class:`~fedbandit_env.core.mab.RolloutStopped`. Where :attr:`rolls_out` is false,
        a ``ValueError``; an arm the env would refuse raises its ``ValueError`` before that
        step. No layer hooks into a linear rollout: ``observe`` (``MABCore.rollout``'s
        hook) must be ``None``.

        Envs whose messages go by Synchronize (:attr:`synchronizes`) take a talking step,
        ``act(last_arms, last_rewards_f32, t, pools, pool_of, sets, server, synced,
        *state, arms_out, sent)``: it reads what the server sent after the last step
        (``server`` ``(B, D)`` float32, where ``synced[b]``) and writes the messages into
        ``sent`` ``(B, N, D)`` (the same array every step: what it does not write stays);
        the rounds, their sums and their costs are Synchronize's
        (:func:`~fedbandit_env.core.kernels.rollout_linear_sync`), and a message the env
        would refuse raises its ``ValueError`` before that step.

        Envs whose messages go by GammaHops (:attr:`gamma` above 0) take a talking step
        ``act(last_arms, last_rewards_f32, t, pools, pool_of, sets, heard, slot, mask,
        *state, arms_out, sent)``: receiver ``r`` of env ``b`` got ``heard[b, slot[r, v],
        v]`` from origin ``v`` after the last step where ``mask[b, r, v]`` (the PettingZoo
        observation's ``messages`` and ``mask``, read in the ring of what was sent), and
        the protocol's delivery and costs are GammaHops'
        (:func:`~fedbandit_env.core.hops.rollout_linear_hops`; the protocols hold what is
        in flight afterwards, so :meth:`step` plays on).

        Examples:
            >>> from numba import njit
            >>> from fedbandit_env.problems.linear import dubey_synthetic
            >>> from fedbandit_env.protocols import Broadcast
            >>> @njit
            ... def first(last, seen, t, pools, pool_of, sets, arms):
            ...     arms[:] = 0
            >>> core = LinearCore(dubey_synthetic(2, set_size=3, dim=2, seed=0),
            ...                   Network.complete(2), [Broadcast()] * 2, horizon=4)
            >>> core.reset([7, 8])
            >>> out = np.zeros((2, 2, 1))
            >>> core.rollout(first, (), np.array([4]), out)
            >>> core.t, bool((out[..., 0] == core.cum_regret).all())
            (4, True)
        """
        if observe is not None:
            raise ValueError("the linear vector env has no layer that observes a rollout")
        if not self.rolls_out:
            raise ValueError(
                "a compiled linear rollout plays envs without messages (or with Synchronize's "
                "or GammaHops') whose pools stack"
            )
        b, n = self.n_envs, self.n_agents
        last = np.array(self.last_arms, dtype=np.int64)
        arms = last.copy()
        seen = np.asarray(self.last_rewards, dtype=np.float32).copy()
        raw, regret = np.array(self.last_rewards, dtype=np.float64), np.zeros((b, n))
        if trace is None:
            trace = np.zeros((0, 0, 0), np.int64), np.zeros((0, 0, 0), np.float32)
        steps = np.ascontiguousarray(steps, dtype=np.int64)
        r = int(np.searchsorted(steps, self.t, side="right"))  # records already passed
        ahead = max(1, ROLLOUT_NUMBERS // max(1, b * n))
        env = self._env_arrays()
        if self.message_dim:
            cost = np.zeros((b, steps.size)) if cost_out is None else cost_out
            play = self._rollout_hops if self.gamma else self._rollout_sync
            play(act, state, steps, out, trace, cost, stop, r, ahead, last, arms, seen, raw,
                 regret)  # fmt: skip
            return

        roll = SameTypes(rollout_linear)  # every block's arguments of the first's types

        def block(r: int, until: int) -> tuple[int, int]:
            return roll(act, state, env, self.sets, self.t, until, self.horizon, last, arms,
                        seen, raw, regret, self.cum_regret, steps, r, out, *trace)  # fmt: skip

        try:
            self._play(block, r, ahead, stop, arms, None)
        finally:  # the last step's arms, rewards and regret, as step() leaves them
            self.last_arms, self.last_rewards, self.last_regret = last, raw, regret
        if cost_out is not None:  # no messages: nothing was ever paid
            cost_out[...] = 0.0

    def _play(
        self,
        block: Callable[[int, int], tuple[int, int]],
        r: int,
        ahead: int,
        stop: Callable[[], bool] | None,
        arms: IntArray,
        sent: FloatArray | None,
    ) -> None:
        """Play the episode to its end in blocks of ``ahead`` steps: ``block(r, until)``
        rolls out steps ``t + 1 .. until`` (a compiled rollout) and returns the next record
        and the steps played; ``stop`` is asked before each block
        (:class:`~fedbandit_env.core.mab.RolloutStopped`). A block that stopped short
        stopped before an arm or a message (``sent``) the env refuses: its own error."""
        while self.t < self.horizon:
            if stop is not None and stop():
                raise RolloutStopped(f"stopped after {self.t} of {self.horizon} steps")
            until = min(self.horizon, self.t + ahead)
            r, self.t = block(r, until)
            if self.t < until:
                self.check_actions(arms, sent)
                raise AssertionError("the rollout stopped on an action the env admits")

    def _rollout_sync(
        self,
        act: Any,
        state: tuple[Any, ...],
        steps: IntArray,
        out: FloatArray,
        trace: tuple[IntArray, Float32Array],
        cost_out: FloatArray,
        stop: Callable[[], bool] | None,
        r: int,
        ahead: int,
        last: IntArray,
        arms: IntArray,
        seen: Float32Array,
        raw: FloatArray,
        regret: FloatArray,
    ) -> None:
        """:meth:`rollout` of envs whose messages go by Synchronize."""
        b, n, d = self.n_envs, self.n_agents, self.message_dim
        server, synced = np.zeros((b, d), np.float32), np.zeros(b, np.int8)
        routed = self.last_routed  # a round of the last step, if the episode is under way
        if self._rolled is not None and self._rolled[0] == self.t:  # a rollout's last step
            server[:], synced[:] = self._rolled[1], self._rolled[2]
        elif routed is not None and routed.server is not None and routed.server_mask is not None:
            server[:] = np.asarray(routed.server)[:, 0]
            synced[:] = np.asarray(routed.server_mask)[:, 0, 0]
        sent = np.zeros((b, n, d))
        bounds = np.array(self.message_bounds, dtype=np.float64)
        c1, c2 = (float(c) for c in self.link_costs)
        total = np.zeros(d - 1)

        roll = SameTypes(rollout_linear_sync)

        def block(r: int, until: int) -> tuple[int, int]:
            return roll(act, state, self._env_arrays(), self.sets, self.t, until,
                        self.horizon, last, arms, seen, raw, regret, self.cum_regret, sent,
                        server, synced, bounds, c1, c2, self.cum_cost, total, steps, r, out,
                        cost_out, *trace)  # fmt: skip

        try:
            self._play(block, r, ahead, stop, arms, sent)
        finally:
            self.last_arms, self.last_rewards, self.last_regret = last, raw, regret
            self._rolled = (self.t, server, synced)  # for a rollout that plays on

    def _rollout_hops(
        self,
        act: Any,
        state: tuple[Any, ...],
        steps: IntArray,
        out: FloatArray,
        trace: tuple[IntArray, Float32Array],
        cost_out: FloatArray,
        stop: Callable[[], bool] | None,
        r: int,
        ahead: int,
        last: IntArray,
        arms: IntArray,
        seen: Float32Array,
        raw: FloatArray,
        regret: FloatArray,
    ) -> None:
        """:meth:`rollout` of envs whose messages go by GammaHops."""
        b, n, d = self.n_envs, self.n_agents, self.message_dim
        hops = self._hops
        assert hops is not None
        slot, mask = np.zeros((n, n), np.int64), np.zeros((b, n, n), np.int8)
        sent = np.zeros((b, n, d))
        bounds = np.array(self.message_bounds, dtype=np.float64)
        c1, c2 = (float(c) for c in self.link_costs)

        roll = SameTypes(rollout_linear_hops)

        def block(r: int, until: int) -> tuple[int, int]:
            return roll(
                act, state, self._env_arrays(), self.sets, self.t, until, self.horizon, last,
                arms, seen, raw, regret, self.cum_regret, sent, self._ring, slot, mask,
                hops, bounds, c1, c2, self.network.n_edges, self.cum_cost, steps, r, out,
                cost_out, *trace,
            )  # fmt: skip

        try:
            self._play(block, r, ahead, stop, arms, sent)
        finally:
            self.last_arms, self.last_rewards, self.last_regret = last, raw, regret
            for k, protocol in enumerate(self.router.protocols):  # what is in flight
                assert isinstance(protocol, GammaHops)
                protocol.resume(self._ring[k], self.t)


__all__ = ["LinearCore", "LinearSampler", "ProblemCheck", "draw_problem", "first_problem"]
