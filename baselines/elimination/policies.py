"""Li & Song's private arm elimination: CDP-MAB, DDP-MAB, HDP-MAB (per-agent policies).

One epoch ``r`` of every variant (Algorithms 1, 3 and 5):

1. **Local exploration** (Alg. 1 lines 3-8): with ``Delta_r`` (:func:`elim_delta`),
   ``S(r)`` (:func:`epoch_target`) and ``C(r)`` (:func:`elim_radius`), pull every active
   arm ``S(r) - S(r-1)`` times, round robin in arm order.
2. **Privatise** (lines 9-10): the epoch mean ``xhat`` of each active arm plus
   ``Lap(1 / (n eps (S(r) - S(r-1))))`` (:class:`~fedbandit_env.privacy.LaplaceMechanism`
   with sensitivity ``1 / (S(r) - S(r-1))`` and epsilon ``n eps``), folded into the running
   private mean ``ybar`` by eq. (6).
3. **Communicate** (line 11): send ``[1, ybar]`` (the round protocols' send flag, then the
   payload) through the variant's protocol: ``"server"`` (CDP), ``"gis_flooding"`` (DDP),
   ``"hybrid"`` (HDP); see :mod:`fedbandit_env.protocols.rounds`.
4. **Local exploitation** while the round is in flight (Alg. 2 line 3, Alg. 5 line 11):
   pull the active arm of largest *local* empirical mean.
5. **Aggregate and eliminate** (lines 12-15) on arrival: the mean of the agents' ``ybar``
   (from the server, or averaged by the agent itself after flooding); drop every arm
   ``2 C(r)`` or more below the best. One arm left: play it to the end.

Readings chosen (see also the protocols' module):

- ``S(r)`` is real; we pull ``ceil(S(r)) - ceil(S(r-1))`` times (:func:`epoch_total`), and
  eq. (6) weighs with these integers; ``C(r)`` uses ``S(r)`` as printed.
- ``n`` in ``S``, ``C`` and the noise is the number of agents aggregated: ``ceil(pM)`` for
  CDP with participation ``p`` (Sec. IV-B), ``M`` otherwise.
- The upload takes one step: a message leaves with the action after the epoch's last
  reward is seen, so each round costs the protocol's delay plus one step of local
  exploitation (the paper counts the delay only; ``O(log T)`` extra steps in all).
- Algorithm 3 line 9 averages ``yhat``; we average ``ybar`` as Algorithm 1 and the text of
  Sec. V-A4 do (``C(r)`` is calibrated to all ``S(r)`` samples).
- With ``rounds = R`` (Sec. IV-B), after the ``R``-th elimination every agent commits to
  the best aggregated arm (the ``R + 1``-th epoch is pure exploitation).
- The server (or each agent after flooding) receives the aggregated means and eliminates
  itself; the paper's server broadcasts the active set, which is a function of the same
  aggregate, so the arms pulled are the same.
- Privacy: rewards are clipped to a known range (``[0, 1]`` in the paper; the env's
  declared bounds or ``clip``) and the noise is calibrated to its width; unbounded
  rewards without a range are refused. Each release is then ``(n eps)``-DP for one
  agent's rewards (the paper's ``M eps`` claim); epochs use disjoint rewards, so
  releases compose in parallel and the whole run stays ``(n eps)``-DP
  (:attr:`EliminationPolicy.privacy_claim`).
"""

from __future__ import annotations

import numpy as np

from baselines.elimination.kernels import (
    argmax_active,
    elim_delta,
    elim_radius,
    eliminate,
    epoch_target,
    epoch_total,
    local_best,
    running_private_mean,
)
from fedbandit_env.policies import AgentSpec, Policy, Requirements
from fedbandit_env.privacy.mechanisms import (
    LaplaceMechanism,
    Noise,
    check_noise,
    clip_range,
    noise_generator,
)
from fedbandit_env.protocols.kernels import mean_rows
from fedbandit_env.protocols.rounds import participants
from fedbandit_env.type_aliases import Action, FloatArray, Observation, SeedLike

_EXPLORE, _UPLOAD, _WAIT, _COMMIT = range(4)


def private_epoch_means(
    epoch_sums: FloatArray,
    pulls: int,
    n_up: int,
    epsilon: float | None,
    rng: np.random.Generator,
    width: float = 1.0,
) -> FloatArray:
    """Algorithm 1 lines 8-9: the epoch means ``xhat = sums / pulls`` plus
    ``Lap(width / (n eps pulls))`` each, i.e. the Laplace mechanism with sensitivity
    ``width / pulls`` (one reward in a range of that ``width``, ``[0, 1]`` in the paper,
    changes one mean by at most that) at epsilon ``n eps``; ``epsilon=None`` releases
    ``xhat`` as is. The caller clips the rewards into the range first.

    Examples:
        >>> out = private_epoch_means(np.array([3.0, 7.0]), 10, 5, 1.0, np.random.default_rng(0))
        >>> out.shape, bool(np.all(np.abs(out - [0.3, 0.7]) < 0.2))
        ((2,), True)
    """
    xhat = np.asarray(epoch_sums, dtype=np.float64) / pulls
    if epsilon is None:
        return xhat
    return LaplaceMechanism(epsilon=n_up * epsilon, sensitivity=width / pulls).release(xhat, rng)


class EliminationPolicy(Policy):
    """The shared epoch loop of CDP-, DDP- and HDP-MAB (see the module docstring).

    Subclasses set :attr:`protocol` and, for CDP, the number of uploaders.

    Args:
        epsilon: Privacy level ``eps`` (``None``: no noise, and ``S``, ``C`` lose their
            privacy terms).
        rounds: At most ``R`` communication rounds with ``Delta_r = Delta^(r/R)``
            (``None``: Algorithm 1's ``Delta_r = 2^-r``, as many rounds as needed).
        min_gap: The smallest gap ``Delta``, required with ``rounds`` (the paper assumes
            it known).
        clip: The reward range ``(low, high)`` the policy clips to and calibrates its
            noise for (sensitivity ``(high - low) / pulls``); default: the range the
            env's ``reward`` box declares, which must be finite
            (:func:`~fedbandit_env.privacy.clip_range`: unbounded rewards are refused).
        noise: ``"seeded"`` (the agent's stream of the team seed: replayable, private
            only against observers who do not know the seed) or ``"secure"`` (fresh OS
            entropy; :data:`~fedbandit_env.privacy.Noise`).

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> from fedbandit_env.policies import IndependentTeam
        >>> from fedbandit_env.runner import rollout
        >>> s = Scenario(n_agents=4, n_arms=3, horizon=400, instance="homogeneous")
        >>> team = IndependentTeam(lambda: CDPMAB(epsilon=None))
        >>> env = s.make_env(team.requirements(4, 3))
        >>> _, regret, cost = rollout(env, team, seed=0)
        >>> bool(cost[-1] == 25 * 4 * team.policies[0].rounds_done)
        True
    """

    protocol: str = "server"
    """The protocol name this variant needs (:data:`~fedbandit_env.protocols.PROTOCOLS`)."""

    def __init__(
        self,
        epsilon: float | None = 1.0,
        rounds: int | None = None,
        min_gap: float | None = None,
        clip: tuple[float, float] | None = None,
        noise: Noise = "seeded",
    ) -> None:
        self.noise = check_noise(noise, type(self).__name__)
        if epsilon is not None and not (epsilon > 0 and np.isfinite(epsilon)):
            raise ValueError(f"epsilon must be a finite number > 0 or None, got {epsilon!r}")
        if rounds is not None:
            if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
                raise ValueError(f"rounds must be an int >= 1 or None, got {rounds!r}")
            if min_gap is None or not 0.0 < min_gap < 1.0:
                raise ValueError(
                    f"rounds needs the smallest gap min_gap in (0, 1), got {min_gap!r}"
                )
        if clip is not None:
            clip = clip_range(clip, (0.0, 1.0), type(self).__name__)
        self.epsilon = epsilon
        self.rounds = rounds
        self.min_gap = min_gap
        self.clip = clip
        self.rounds_done = 0

    # ------------------------------------------------------------------ contract
    def uploaders(self, n_agents: int) -> int:
        """How many agents' means each aggregate averages (``n`` in ``S``, ``C``)."""
        return n_agents

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """Messages ``[flag, ybar_1..ybar_M]`` through :attr:`protocol`; private runs need
        rewards in a known range."""
        return Requirements(
            message_dim=1 + n_arms,
            protocol=self.protocol,
            bounded_rewards=self.epsilon is not None,
        )

    @property
    def privacy_claim(self) -> float:
        """``n eps``: the epsilon every released mean (and the whole run) satisfies."""
        if self.epsilon is None:
            return float("inf")
        return self._n_up * self.epsilon

    def privacy_epsilon(self, n_agents: int, n_arms: int) -> float | None:
        """``n eps`` with ``n`` = :meth:`uploaders` (the paper's claim for its algorithms: each
        reward enters one released epoch mean; epochs are disjoint), ``None`` without
        privacy (raw means are sent).

        Examples:
            >>> DDPMAB(epsilon=0.1).privacy_epsilon(10, 5)
            1.0
        """
        return None if self.epsilon is None else self.uploaders(n_agents) * self.epsilon

    def noise_source(self) -> str | None:
        """``noise`` when the epoch means are noised, ``None`` without privacy.

        Examples:
            >>> CDPMAB(noise="secure").noise_source(), CDPMAB(epsilon=None).noise_source()
            ('secure', None)
        """
        return None if self.epsilon is None else self.noise

    def reset(self, spec: AgentSpec, seed: SeedLike = None) -> None:
        """Start epoch 1 with every arm active."""
        if spec.message_dim != 1 + spec.n_arms:
            raise ValueError(
                f"{type(self).__name__} needs message_dim = 1 + n_arms = {1 + spec.n_arms}, "
                f"got {spec.message_dim}; build the env from policy.requirements(...)"
            )
        m = spec.n_arms
        self._spec = spec
        self._rng = noise_generator(self.noise, seed)  # the Laplace noise alone
        # the clip range and the noise's sensitivity (both paths: clip_range)
        self._lo, self._hi, self._width = -np.inf, np.inf, 1.0
        if self.epsilon is not None:
            self._lo, self._hi = clip_range(self.clip, spec.reward_bounds, type(self).__name__)
            self._width = self._hi - self._lo
        self._n_up = self.uploaders(spec.n_agents)
        self._eps = float("inf") if self.epsilon is None else float(self.epsilon)
        self._counts = np.zeros(m)
        self._sums = np.zeros(m)
        self._epoch_sums = np.zeros(m)
        self._ybar = np.zeros(m)
        self._sent = np.zeros(m)
        self._active = np.ones(m, dtype=bool)
        self._r = 0
        self._previous = 0
        self._total = 0
        self._radius = 0.0
        self._pos = 0
        self._order = np.arange(m)
        self._phase = _EXPLORE
        self._arm = -1
        self._explored = False
        self.rounds_done = 0
        self._start_epoch()

    def act(self, observation: Observation) -> Action:
        """Record the last reward, process a round's result, pick the arm (and message)."""
        if self._arm >= 0:
            reward = min(max(float(observation["reward"][0]), self._lo), self._hi)
            self._counts[self._arm] += 1.0
            self._sums[self._arm] += reward
            if self._explored:
                self._epoch_sums[self._arm] += reward
        message = np.zeros(1 + self._spec.n_arms, dtype=np.float32)
        if self._phase == _WAIT:
            aggregate = self._arrived(observation)
            if aggregate is not None:
                self._finish_round(aggregate)
            elif observation.get("server_dropped", (0,))[0]:
                self._skip_round()
        self._explored = False
        if self._phase == _EXPLORE:
            arm = int(self._order[self._pos % self._order.size])
            self._pos += 1
            self._explored = True
            if self._pos == self._order.size * (self._total - self._previous):
                self._phase = _UPLOAD
        elif self._phase == _UPLOAD:
            message[0] = 1.0
            message[1:] = self._privatise()
            self._sent = message[1:].astype(np.float64)
            self._phase = _WAIT
            arm = local_best(self._sums, self._counts, self._active)
        elif self._phase == _WAIT:
            arm = local_best(self._sums, self._counts, self._active)
        else:
            arm = self._commit
        self._arm = arm
        return {"arm": arm, "message": message}

    # ------------------------------------------------------------------ epochs
    def _start_epoch(self) -> None:
        n_active = int(self._active.sum())
        if n_active == 1:
            self._phase, self._commit = _COMMIT, int(np.flatnonzero(self._active)[0])
            return
        self._r += 1
        spec, r = self._spec, self._r
        delta = elim_delta(r, self.rounds or 0, self.min_gap or 0.0)
        s_r = epoch_target(r, n_active, spec.n_arms, self._n_up, spec.horizon, self._eps, delta)
        self._total = epoch_total(s_r, self._previous)
        self._radius = elim_radius(
            r, n_active, spec.n_arms, self._n_up, spec.horizon, self._eps, s_r
        )
        self._order = np.flatnonzero(self._active)
        self._pos = 0
        self._epoch_sums[:] = 0.0
        self._phase = _EXPLORE

    def _privatise(self) -> np.ndarray:
        """Lines 8-10: epoch means, Laplace noise, eq. (6); returns ``ybar`` on the wire."""
        pulls = self._total - self._previous
        sums = self._epoch_sums[self._active]
        yhat = private_epoch_means(sums, pulls, self._n_up, self.epsilon, self._rng, self._width)
        running_private_mean(self._ybar, yhat, self._active, self._previous, self._total)
        wire = np.zeros(self._spec.n_arms, dtype=np.float32)
        wire[self._active] = self._ybar[self._active]
        return wire

    def _arrived(self, observation: Observation) -> np.ndarray | None:
        """The aggregated ``ybar`` if this step's observation completes the round."""
        if observation["server_mask"][0]:
            return np.asarray(observation["server"][1:], dtype=np.float64)
        return None

    def _skip_round(self) -> None:
        """A round whose result the receiver dropped as no honest round's (a forged
        upload poisoned the average; :func:`~fedbandit_env.policies.screen_inbox`): the
        epoch ends without eliminating and the next starts, so the agent uploads again
        (our reading, issue 63; the paper assumes honest agents). Its rewards were
        released once, in the dropped round's upload, so the privacy accounting holds."""
        self._previous = self._total
        self._start_epoch()

    def _finish_round(self, aggregate: np.ndarray) -> None:
        self.rounds_done += 1
        eliminate(aggregate, self._active, self._radius)
        self._previous = self._total
        if self.rounds is not None and self.rounds_done >= self.rounds:
            self._phase, self._commit = _COMMIT, argmax_active(aggregate, self._active)
            return
        self._start_epoch()


class CDPMAB(EliminationPolicy):
    """CDP-MAB (Li & Song, Algorithm 1; Sec. IV-B with ``participation`` and ``rounds``).

    Args:
        epsilon: Privacy level (``None``: no noise).
        participation: Rate ``p``; ``ceil(p M)`` agents upload per round and ``S``, ``C``
            and the noise use that number in place of ``M``.
        rounds: At most ``R`` rounds (needs ``min_gap``).
        min_gap: The smallest gap ``Delta``.
        clip: The reward range (see :class:`EliminationPolicy`).
        noise: Where the noise comes from (see :class:`EliminationPolicy`).

    Examples:
        >>> needs = CDPMAB(participation=0.2).requirements(50, 100)
        >>> needs.message_dim, needs.protocol, needs.participation
        (101, 'server', 0.2)
    """

    protocol = "server"

    def __init__(
        self,
        epsilon: float | None = 1.0,
        participation: float = 1.0,
        rounds: int | None = None,
        min_gap: float | None = None,
        clip: tuple[float, float] | None = None,
        noise: Noise = "seeded",
    ) -> None:
        super().__init__(epsilon, rounds, min_gap, clip, noise)
        if not 0.0 < participation <= 1.0:
            raise ValueError(f"participation must lie in (0, 1], got {participation!r}")
        self.participation = float(participation)

    def uploaders(self, n_agents: int) -> int:
        """``ceil(p M)``."""
        return participants(self.participation, n_agents)

    def requirements(self, n_agents: int, n_arms: int) -> Requirements:
        """Messages through ``ServerRounds(participation)``."""
        return Requirements(
            message_dim=1 + n_arms,
            protocol="server",
            participation=self.participation,
            bounded_rewards=self.epsilon is not None,
        )


class DDPMAB(EliminationPolicy):
    """DDP-MAB (Li & Song, Algorithm 3): GIS flooding, then every agent averages the ``M``
    private means it holds and eliminates on its own.

    Examples:
        >>> DDPMAB(epsilon=0.5).requirements(5, 3).protocol
        'gis_flooding'
    """

    protocol = "gis_flooding"

    def _arrived(self, observation: Observation) -> np.ndarray | None:
        mask = np.asarray(observation["mask"], dtype=bool)
        if not mask.any():
            return None
        rows = mask.copy()
        rows[self._spec.index] = True
        payloads = np.asarray(observation["messages"][:, 1:], dtype=np.float64)
        payloads[self._spec.index] = self._sent
        return mean_rows(payloads, rows, np.zeros(self._spec.n_arms))


class HDPMAB(EliminationPolicy):
    """HDP-MAB (Li & Song, Algorithm 5): sink collection inside the network's components,
    then the server; the components are the network's connected components.

    Examples:
        >>> HDPMAB().requirements(5, 3).protocol
        'hybrid'
    """

    protocol = "hybrid"
