"""DDUCB (Martinez-Rubio, Kanade and Rebeschini, NeurIPS 2019) and coop-UCB2 (Landgren,
Srivastava and Leonard 2016): UCB on consensus estimates of the network's statistics.

Both assume homogeneous agents (every agent's arm means are the global ones) and talk
to every neighbour every step (the ``neighbours`` setting's ``Broadcast``). Both mix
through the consensus matrix ``P = I - L / (d_max + 1)``
(:attr:`~fedbandit_env.network.Network.consensus_matrix`), whose row an agent builds
from its neighbours and ``d_max``; the env tells it ``|lambda_2(P)|`` and Landgren's
``eps_c^i`` (:class:`~fedbandit_env.policies.AgentSpec`). Every agent first pulls each
arm once (steps ``1 .. M``, counted in the regret).

Timing. A message sent at env step ``s`` is read when choosing the action of step ``s +
1``: one communication round per step, the model of both papers. Messages cross the
wire as float32. State vectors are ``[counts..., sums...]`` (:mod:`.kernels`).

Where we chose between readings (the authors' code is damaru2/decentralized-bandits):

- The code applies its whole stage mixer (``P^C``, or the degree-``C`` Chebyshev
  polynomial) at *every* step of a stage, ``C`` communication rounds a step, and
  coop-UCB mixes the whole network after each agent's pull (``N`` rounds a step). Here
  each step is one round, as both papers' models allow.
- Its accelerated DDUCB assigns ``alpha = delta`` without a copy, so an agent's own
  pulls, added to ``alpha`` with weight ``1 / N``, also stay in ``delta``; its
  unaccelerated form assigns ``alpha = beta`` before ``beta += gamma``, so ``alpha``
  holds the agent's last stage at weight 1. Here ``alpha`` is a copy.
- Its ``eps_c`` reads eigenvectors as rows of ``numpy.linalg.eig``'s matrix (they are
  its columns) without the sort applied to the eigenvalues: on its cycle of 100 it
  ranges over [219, 2222] where the constant is 1194 for every agent. Here it is the
  definition (:attr:`~fedbandit_env.network.Network.consensus_epsilon`).
- ``alpha`` starts at the first pulls divided by ``M``, as the code does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from baselines.consensus.kernels import (
    accelerated_stage,
    chebyshev_coefficients,
    chebyshev_step,
    mix_row,
    plain_stage,
    ucb_arm,
)
from fedbandit_env.policies import AgentSpec, Policy, Requirements
from fedbandit_env.type_aliases import FloatArray, IntArray, Observation, SeedLike


def consensus_sigma(sigma: float | None, bounds: tuple[float, float]) -> float:
    """The rewards' sub-Gaussian scale: ``sigma`` if given, half the declared range if
    finite, else 1.

    Examples:
        >>> consensus_sigma(None, (0.0, 1.0)), consensus_sigma(None, (-np.inf, np.inf))
        (0.5, 1.0)
    """
    if sigma is not None:
        return float(sigma)
    lo, hi = bounds
    return float(hi - lo) / 2.0 if np.isfinite(lo) and np.isfinite(hi) and hi > lo else 1.0


def consensus_facts(spec: AgentSpec) -> tuple[IntArray, float, float, float]:
    """An agent's neighbours, its weight ``1 / (d_max + 1)`` in ``P``, ``|lambda_2(P)|``
    and ``eps_c^i`` (raises where the env gives no graph).

    Examples:
        >>> spec = AgentSpec(0, 3, 2, 10, neighbors=(1, 2), max_degree=2,
        ...                  consensus_lambda=0.0, consensus_epsilon=0.0)
        >>> consensus_facts(spec)[:2]
        (array([1, 2]), 0.3333333333333333)
    """
    if not spec.neighbors or not np.isfinite(spec.consensus_lambda):
        raise ValueError("consensus bandits need a communication graph with edges (no graph)")
    weight = 1.0 / (spec.max_degree + 1.0)
    neighbours = np.asarray(spec.neighbors, dtype=np.int64)
    return neighbours, weight, float(spec.consensus_lambda), float(spec.consensus_epsilon)


class _Consensus(Policy):
    """What both share: the graph facts, the first pulls, the mixing round."""

    def __init__(self, sigma: float | None) -> None:
        if sigma is not None and not (sigma > 0 and np.isfinite(sigma)):
            raise ValueError(f"sigma must be a finite number > 0 or None, got {sigma!r}")
        self.sigma_arg = sigma
        self.spec = AgentSpec(0, 1, 1, 1)
        self.neighbours: IntArray = np.zeros(0, dtype=np.int64)
        self.weight, self.lam, self.eps_c, self.sigma = 0.0, 0.0, 0.0, 1.0
        self.mixed: FloatArray = np.zeros(0)

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """``2M`` numbers a step to every neighbour (``Broadcast``)."""
        return Requirements(message_dim=2 * n_arms, protocol="broadcast")

    def _reset(self, spec: AgentSpec) -> None:
        if spec.message_dim < 2 * spec.n_arms:
            raise ValueError(
                f"{type(self).__name__} sends {2 * spec.n_arms} numbers a step; the env "
                f"carries {spec.message_dim}"
            )
        self.spec = spec
        self.neighbours, self.weight, self.lam, self.eps_c = consensus_facts(spec)
        self.sigma = consensus_sigma(self.sigma_arg, spec.reward_bounds)
        self.mixed = np.zeros(2 * spec.n_arms)

    def _mix(self, own: FloatArray, observation: Observation) -> FloatArray:
        """One round: ``P``'s row on ``own`` and the neighbours' last messages.

        A neighbour's message dropped as a forgery (``observation["dropped"]``, from
        :func:`~fedbandit_env.policies.screen_inbox`) is replaced by ``own``: its weight
        stays with the agent, so the row still sums to 1 (our reading; the paper assumes
        honest neighbours). A message that did not arrive is refused: the algorithm
        needs every neighbour every step."""
        mask = observation["mask"]
        dropped = observation.get("dropped")
        if not all(mask[j] or (dropped is not None and dropped[j]) for j in self.neighbours):
            raise ValueError(
                f"{type(self).__name__} mixes with every neighbour every step; a "
                "neighbour's message is missing (run it where Broadcast delivers all)"
            )
        received = observation["messages"][:, : own.size]
        if dropped is not None and dropped.any():
            received = np.array(received)  # a copy, in the env's dtype
            received[np.asarray(dropped, dtype=bool)] = own
        return mix_row(own, received, self.neighbours, self.neighbours.size, self.weight,
                       self.mixed)  # fmt: skip

    def _send(self, arm: int, state: FloatArray) -> dict[str, object]:
        out = np.zeros(self.spec.message_dim, dtype=np.float32)
        out[: state.size] = state
        return {"arm": arm, "message": out}


STAGE_RULES = ("accelerated", "plain")
"""The named stage formulas :class:`DDUCB` takes for ``stage``."""


class DDUCB(_Consensus):
    """Decentralized delayed UCB (Martinez-Rubio, Kanade and Rebeschini 2019, Alg. 1-2).

    Time runs in stages of ``C`` steps. During a stage an agent adds its pulls to
    ``gamma`` (weight 1) and to ``alpha`` (weight ``1 / N``), while ``beta`` (what it
    had gathered by the stage's start) runs ``C`` rounds of consensus; at the stage's
    end the consensus result (an estimate of the network's average) is added to
    ``delta``, ``alpha`` becomes ``delta``, ``beta`` becomes ``gamma``. It pulls the arm
    of largest ``alpha_sum / alpha_count + sqrt(2 eta sigma^2 ln s / (N alpha_count))``,
    ``s`` the network's pulls the delayed estimates hold (``N (t - C)``; ``M + N (t -
    M)`` in the first stage, as the authors' code counts).

    Accelerated (default): Chebyshev rounds, ``C = ceil(ln(2N / eps) / sqrt(2 ln(1 /
    |lambda_2|)))``. Unaccelerated: plain rounds of ``P`` and ``C = ceil(ln(N / eps) /
    ln(1 / |lambda_2|))``; ``beta`` keeps the running total, so older data keep mixing
    (the code's form: ``alpha = beta; beta += gamma`` at a stage's end).

    Args:
        accelerated: Chebyshev rounds (True) or plain rounds of ``P``.
        precision: The consensus precision ``eps`` (the authors' experiments: 1/22).
        eta: The width's constant (theirs: 2).
        sigma: The rewards' sub-Gaussian scale (default: half the declared range, or 1).
        stage: ``C``: an integer, ``"accelerated"`` or ``"plain"`` (that variant's
            formula, whatever rounds run: the authors' code's ``C_small`` runs plain
            rounds with the accelerated ``C``, their best), or ``None`` (the formula of
            the rounds that run).
        code_alias: ``alpha`` as the authors' code leaves it (module docstring):
            accelerated, the agent's own pulls since the first stage's end stay in
            ``delta`` at weight ``1 / N``; plain, ``alpha`` gets its last stage at
            weight 1. False: the copy the algorithm describes.

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.network import Network
        >>> from fedbandit_env.policies import IndependentTeam
        >>> from fedbandit_env.protocols import Broadcast
        >>> env = federated_mab_v0.parallel_env(n_agents=4, n_arms=2, horizon=5,
        ...     message_dim=4, protocol=Broadcast(), network=Network.ring(4))
        >>> team = IndependentTeam(DDUCB)
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> [team.act(obs)[a]["arm"] for a in ("agent_0", "agent_3")]
        [0, 0]
    """

    def __init__(
        self,
        accelerated: bool = True,
        precision: float = 1.0 / 22.0,
        eta: float = 2.0,
        sigma: float | None = None,
        stage: int | str | None = None,
        code_alias: bool = False,
    ) -> None:
        super().__init__(sigma)
        if not (precision > 0 and np.isfinite(precision)):
            raise ValueError(f"precision must be a finite number > 0, got {precision!r}")
        if not (eta > 0 and np.isfinite(eta)):
            raise ValueError(f"eta must be a finite number > 0, got {eta!r}")
        if (
            stage is not None
            and stage not in STAGE_RULES
            and (isinstance(stage, bool | str) or int(stage) != stage or stage < 1)
        ):
            raise ValueError(
                f"stage must be an integer >= 1, one of {STAGE_RULES} or None, got {stage!r}"
            )
        self.accelerated = bool(accelerated)
        self.precision, self.eta = float(precision), float(eta)
        self.stage_arg: int | str | None = (
            stage if stage is None or stage in STAGE_RULES else int(stage)
        )
        self.code_alias = bool(code_alias)
        self.closed = False
        self.stage = 1
        self.a: FloatArray = np.ones(1)
        self.b: FloatArray = np.zeros(1)
        self.alpha = self.y = self.y_prev = self.gamma = self.delta = np.zeros(0)
        self.r = 0

    def stage_length(self, n_agents: int, lam: float) -> int:
        """``C``: the override, or the variant's formula (:func:`accelerated_stage`,
        :func:`plain_stage`).

        Examples:
            >>> lam = 1 / 3 + 2 / 3 * math.cos(2 * math.pi / 100)  # the cycle of 100
            >>> DDUCB().stage_length(100, lam), DDUCB(accelerated=False).stage_length(100, lam)
            (164, 5847)
            >>> DDUCB(accelerated=False, stage="accelerated").stage_length(100, lam)  # C_small
            164
        """
        if isinstance(self.stage_arg, int):
            return self.stage_arg
        fast = self.accelerated if self.stage_arg is None else self.stage_arg == "accelerated"
        rule = accelerated_stage if fast else plain_stage
        return rule(n_agents, lam, self.precision)

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Read the graph facts, size the stage, forget every statistic."""
        self._reset(spec)
        self.stage = self.stage_length(spec.n_agents, self.lam)
        if self.accelerated:
            self.a, self.b = chebyshev_coefficients(self.lam, self.stage)
        else:
            self.a, self.b = np.ones(self.stage), np.zeros(self.stage)
        size = 2 * spec.n_arms
        self.alpha, self.y, self.y_prev = np.zeros(size), np.zeros(size), np.zeros(size)
        self.gamma, self.delta = np.zeros(size), np.zeros(size)
        self.r = 0
        self.closed = False

    def log_s(self, done: int) -> float:
        """``ln s`` after ``done`` steps (the class docstring's ``s``)."""
        n, m, c = self.spec.n_agents, self.spec.n_arms, self.stage
        s = m + n * (done - m) if done < m + c else n * (done - c)
        return math.log(max(s, 1))

    def act(self, observation: Observation) -> dict[str, object]:
        """Absorb the last pull, run this step's round (closing a stage), pull, send."""
        done = int(observation["step"][0])
        m, n = self.spec.n_arms, self.spec.n_agents
        if done > 0:
            arm, u = int(observation["arm"]), float(observation["reward"][0])
            if done <= m:  # a first pull: the stage-1 buffer beta
                self.y[arm] += 1.0
                self.y[m + arm] += u
            else:
                self.gamma[arm] += 1.0
                self.gamma[m + arm] += u
                self.alpha[arm] += 1.0 / n
                self.alpha[m + arm] += u / n
                if self.code_alias and self.closed and self.accelerated:  # delta is alpha
                    self.delta[arm] += 1.0 / n
                    self.delta[m + arm] += u / n
        if done == m:  # the first stage starts: alpha from the first pulls / M
            self.alpha[:] = self.y / m
        elif done > m:
            self._round(observation)
        if done < m:
            return self._send(done, self.y)
        width2 = 2.0 * self.eta * self.sigma**2 / n
        return self._send(ucb_arm(self.alpha, m, self.log_s(done), width2, 0.0), self.y)

    def _round(self, observation: Observation) -> None:
        mixed = self._mix(self.y, observation)
        r = self.r
        if self.accelerated:
            chebyshev_step(mixed, self.y_prev, self.a[r], self.b[r], mixed)
            self.y_prev[:] = self.y
            self.y[:] = mixed
        else:
            self.y[:] = mixed
        self.r += 1
        if self.r == self.stage:  # the stage's end
            if self.accelerated:
                self.delta += self.y
                self.alpha[:] = self.delta
                self.y[:] = self.gamma
                self.y_prev[:] = 0.0
            else:
                self.alpha[:] = self.y
                self.y += self.gamma
                if self.code_alias:  # alpha is beta when gamma is added
                    self.alpha[:] = self.y
            self.gamma[:] = 0.0
            self.r = 0
            self.closed = True


class CoopUCB2(_Consensus):
    """coop-UCB2 (Landgren, Srivastava and Leonard 2016): UCB on running-consensus
    estimates of every arm's average pull count ``n_hat`` and reward sum ``s_hat``.

    Each step an agent sends ``x + e`` (its estimates plus its last pull's count and
    reward) and replaces ``x`` by ``P``'s row applied to what it and its neighbours
    sent: the running consensus ``x(t + 1) = P (x(t) + e(t))``. It pulls the arm of
    largest ``s_hat / n_hat + sigma sqrt(2 gamma (n_hat + eps_c^i) ln t / (N n_hat^2))``
    over ``x + e``, ``t`` the steps since its first pulls (``ln 1 = 0`` at the first
    choice, as the authors' code).

    Args:
        gamma: The exploration constant (> 1 in the paper's bound; DDUCB's experiments
            run 2, 1.01 and 1.0001).
        sigma: The rewards' sub-Gaussian scale (default: half the declared range, or 1).
        graph_constants: Every agent's ``eps_c`` in place of the definition's (one per
            agent; the reproduction passes the authors' code's values).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.network import Network
        >>> from fedbandit_env.policies import IndependentTeam
        >>> from fedbandit_env.protocols import Broadcast
        >>> env = federated_mab_v0.parallel_env(n_agents=4, n_arms=2, horizon=5,
        ...     message_dim=4, protocol=Broadcast(), network=Network.ring(4))
        >>> team = IndependentTeam(CoopUCB2)
        >>> obs, _ = env.reset(seed=0); team.reset(env, seed=0)
        >>> team.act(obs)["agent_1"]["arm"]
        0
    """

    def __init__(
        self,
        gamma: float = 1.01,
        sigma: float | None = None,
        graph_constants: Sequence[float] | None = None,
    ) -> None:
        super().__init__(sigma)
        if not (gamma > 0 and np.isfinite(gamma)):
            raise ValueError(f"gamma must be a finite number > 0, got {gamma!r}")
        self.gamma = float(gamma)
        self.constants = None
        if graph_constants is not None:
            self.constants = np.asarray(graph_constants, dtype=np.float64).ravel()
            if not (np.isfinite(self.constants).all() and (self.constants >= 0).all()):
                raise ValueError("graph_constants must be finite numbers >= 0")
        self.sent = np.zeros(0)

    def constant_of(self, index: int, n_agents: int, defined: float) -> float:
        """Agent ``index``'s ``eps_c``: the override's entry, or the env's ``defined``.

        Examples:
            >>> CoopUCB2(graph_constants=[1.0, 2.0]).constant_of(1, 2, 5.0)
            2.0
        """
        if self.constants is None:
            return float(defined)
        if self.constants.size != n_agents:
            raise ValueError(
                f"graph_constants has {self.constants.size} entries for {n_agents} agents"
            )
        return float(self.constants[index])

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Read the graph facts, forget every estimate."""
        self._reset(spec)
        self.eps_c = self.constant_of(spec.index, spec.n_agents, self.eps_c)
        self.sent = np.zeros(2 * spec.n_arms)

    def act(self, observation: Observation) -> dict[str, object]:
        """Mix what was sent last step, add the last pull, pull, send."""
        done = int(observation["step"][0])
        m, n = self.spec.n_arms, self.spec.n_agents
        if done > 0:
            state = self._mix(self.sent, observation).copy()
            arm = int(observation["arm"])
            state[arm] += 1.0
            state[m + arm] += float(observation["reward"][0])
            self.sent = state
        if done < m:
            return self._send(done, self.sent)
        width2 = 2.0 * self.gamma * self.sigma**2 / n
        log_t = math.log(done - m + 1)
        return self._send(ucb_arm(self.sent, m, log_t, width2, self.eps_c), self.sent)


__all__ = ["DDUCB", "STAGE_RULES", "CoopUCB2", "consensus_facts", "consensus_sigma"]
