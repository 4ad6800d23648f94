"""Heterogeneous federated multi-armed bandit problems.

A problem is the world the agents live in: agent ``i`` pulling arm ``k`` sees a reward
drawn around its *local* mean ``mu[i, k]``; the *global* mean of arm ``k`` is the average
over agents ``mu[k] = mean_i mu[i, k]`` (Zhu et al., Sec. 2; ``../ALGORITHMS.md``
notation).  Regret is scored against the global means, so an agent whose locally best
arm differs from the globally best one cannot learn the right arm alone.

Problems are frozen dataclasses (the gymnax habit): the numbers live here, the shapes
follow from them, and an environment never mutates its problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np
from scipy.special import ndtr

from fedbandit_env.problems.kernels import NOISE_CODES
from fedbandit_env.type_aliases import FloatArray, IntArray, SeedLike
from fedbandit_env.validation import check_int

NoiseKind = Literal["bernoulli", "gaussian", "clipped_gaussian"]
NOISE_KINDS: tuple[str, ...] = get_args(NoiseKind)


def _as_means(local_means: object) -> FloatArray:
    try:
        means = np.array(local_means, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"local_means must be a 2-D array of floats (agents x arms), got {local_means!r}"
        ) from err
    if means.ndim != 2:
        raise ValueError(
            f"local_means must be 2-D (agents x arms), got an array of shape {means.shape}"
        )
    n_agents, n_arms = means.shape
    if n_agents < 1:
        raise ValueError(f"local_means must have at least 1 agent (row), got {n_agents}")
    if n_arms < 1:
        raise ValueError(f"local_means must have at least 1 arm (column), got {n_arms}")
    if not np.all(np.isfinite(means)):
        raise ValueError("local_means must be finite, got NaN or infinity")
    means.setflags(write=False)
    return means


def noise_draws(rng: np.random.Generator, noise: str, shape: tuple[int, ...]) -> FloatArray:
    """The random numbers behind rewards of ``shape``: uniforms for Bernoulli noise,
    standard normals otherwise. They do not depend on the arms pulled, so a batched env
    draws many steps ahead: ``noise_draws(rng, k, (s, N))`` holds the numbers of ``s``
    calls of ``noise_draws(rng, k, (N,))`` in order (one stream, read in sequence).

    Examples:
        >>> a = noise_draws(np.random.default_rng(0), "bernoulli", (2, 3))
        >>> g = np.random.default_rng(0)
        >>> bool((a == np.stack([noise_draws(g, "bernoulli", (3,)) for _ in "ab"])).all())
        True
    """
    if noise == "bernoulli":
        return rng.random(shape)
    return rng.standard_normal(shape)


def rewards_of(
    pulled: FloatArray, draws: FloatArray, noise: str, sigma: float | FloatArray
) -> FloatArray:
    """Rewards of arms whose local means are ``pulled``, from :func:`noise_draws` of the
    same shape (Bernoulli: ``u < mu``; Gaussian: ``mu + sigma z``, clipped to ``[0, 1]``
    for ``clipped_gaussian``). :meth:`MABProblem.sample` and the batched core
    (:mod:`fedbandit_env.core.mab`) both compute rewards here.

    Examples:
        >>> rewards_of(np.array([0.5, 0.5]), np.array([0.2, 0.7]), "bernoulli", 1.0).tolist()
        [1.0, 0.0]
        >>> rewards_of(np.array([0.9]), np.array([1.0]), "clipped_gaussian", 0.5).tolist()
        [1.0]
    """
    if not isinstance(draws, np.ndarray | np.generic | float):  # an array of a device
        from array_api_compat import array_namespace

        xp = array_namespace(draws)
        if noise == "bernoulli":
            return xp.astype(draws < pulled, xp.float64)
        out = pulled + sigma * draws
        return xp.clip(out, 0.0, 1.0) if noise == "clipped_gaussian" else out
    if noise == "bernoulli":
        return (draws < pulled).astype(np.float64)
    out = pulled + sigma * draws
    if noise == "clipped_gaussian":
        out.clip(0.0, 1.0, out=out)
    return out


@dataclass(frozen=True, eq=False)
class MABProblem:
    """A heterogeneous federated multi-armed bandit: local means plus a noise model.

    Args:
        local_means: Array of shape ``(n_agents, n_arms)``; ``local_means[i, k]`` is
            the mean reward of arm ``k`` at agent ``i``.
        noise: ``"bernoulli"`` (rewards in {0, 1}, means must lie in [0, 1]),
            ``"gaussian"`` (``mu + sigma * z``; Zhu et al. use ``sigma = 1``) or
            ``"clipped_gaussian"`` (``clip(mu + sigma * z, 0, 1)``, a bounded variant
            whose exact expected reward is used for regret, see ``mean_rewards``).
        sigma: Standard deviation of the Gaussian noise (ignored for Bernoulli).

    Examples:
        >>> p = MABProblem([[0.9, 0.1], [0.0, 0.4]], noise="bernoulli")
        >>> p.n_agents, p.n_arms
        (2, 2)
        >>> p.global_means.tolist(), p.best_arm
        ([0.45, 0.25], 0)
        >>> p.local_best_arms.tolist()   # agent 1 would settle on the wrong arm alone
        [0, 1]
    """

    local_means: FloatArray
    noise: NoiseKind = "bernoulli"
    sigma: float = 1.0
    mean_rewards: FloatArray = field(init=False, repr=False)
    _rows: IntArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        means = _as_means(self.local_means)
        object.__setattr__(self, "local_means", means)
        if self.noise not in NOISE_KINDS:
            raise ValueError(f"noise must be one of {NOISE_KINDS}, got {self.noise!r}")
        if isinstance(self.sigma, bool) or not isinstance(self.sigma, int | float):
            raise TypeError(f"sigma must be a float, got {type(self.sigma).__name__}")
        if not np.isfinite(self.sigma) or self.sigma < 0:
            raise ValueError(f"sigma must be a finite number >= 0, got {self.sigma!r}")
        if self.noise == "bernoulli" and (means.min() < 0.0 or means.max() > 1.0):
            raise ValueError(
                "local_means must lie in [0, 1] for Bernoulli noise, got values in "
                f"[{means.min():.3g}, {means.max():.3g}]"
            )
        object.__setattr__(self, "sigma", float(self.sigma))
        object.__setattr__(self, "mean_rewards", self._expected_rewards())
        object.__setattr__(self, "_rows", np.arange(means.shape[0]) * means.shape[1])

    def _expected_rewards(self) -> FloatArray:
        mu = self.local_means
        if self.noise != "clipped_gaussian" or self.sigma == 0.0:
            out = np.clip(mu, 0.0, 1.0) if self.noise == "clipped_gaussian" else mu.copy()
        else:
            # E[clip(X, 0, 1)] for X ~ N(mu, s^2): E[X; 0<X<1] + P(X >= 1).
            s = self.sigma
            a, b = (0.0 - mu) / s, (1.0 - mu) / s
            phi_a = np.exp(-0.5 * a * a) / np.sqrt(2 * np.pi)
            phi_b = np.exp(-0.5 * b * b) / np.sqrt(2 * np.pi)
            out = mu * (ndtr(b) - ndtr(a)) + s * (phi_a - phi_b) + (1.0 - ndtr(b))
        out.setflags(write=False)
        return out

    @property
    def n_agents(self) -> int:
        """Number of agents ``N`` (rows of ``local_means``)."""
        return int(self.local_means.shape[0])

    @property
    def n_arms(self) -> int:
        """Number of arms ``M`` (columns of ``local_means``)."""
        return int(self.local_means.shape[1])

    @property
    def global_means(self) -> FloatArray:
        """Expected reward of each arm averaged over agents, shape ``(n_arms,)``."""
        return self.mean_rewards.mean(axis=0)

    @property
    def best_arm(self) -> int:
        """The globally best arm (lowest index among ties)."""
        return int(np.argmax(self.global_means))

    @property
    def gaps(self) -> FloatArray:
        """Global sub-optimality gap of each arm, ``max_k mu[k] - mu[k]`` (>= 0)."""
        g = self.global_means
        return g.max() - g

    @property
    def min_gap(self) -> float:
        """Smallest positive global gap (``inf`` if every arm is optimal)."""
        pos = self.gaps[self.gaps > 1e-12]
        return float(pos.min()) if pos.size else float("inf")

    @property
    def local_best_arms(self) -> IntArray:
        """Each agent's locally best arm, shape ``(n_agents,)``."""
        return np.argmax(self.mean_rewards, axis=1)

    @property
    def conflicting_agents(self) -> IntArray:
        """Indices of agents whose locally best arm is not the globally best arm."""
        return np.flatnonzero(self.local_best_arms != self.best_arm)

    @property
    def reward_bounds(self) -> tuple[float, float]:
        """Smallest and largest reward the noise model can produce."""
        if self.noise == "gaussian" and self.sigma > 0:
            return (-np.inf, np.inf)
        if self.noise == "gaussian":
            return (float(self.local_means.min()), float(self.local_means.max()))
        return (0.0, 1.0)

    def sample(self, arms: IntArray, rng: np.random.Generator) -> FloatArray:
        """Draw one reward per agent: agent ``i`` pulls ``arms[i]``.

        Args:
            arms: Integer array of shape ``(n_agents,)``.
            rng: The generator to draw from.

        Returns:
            Float64 rewards of shape ``(n_agents,)``.

        Examples:
            >>> p = MABProblem([[1.0, 0.0], [0.0, 1.0]])
            >>> p.sample(np.array([0, 0]), np.random.default_rng(0)).tolist()
            [1.0, 0.0]
        """
        # Vectorized NumPy draws; the compiled ``core.kernels.pull_arms`` of the fast
        # path draws the same numbers one by one (tests/runner/test_replay.py). Passing a
        # Generator into compiled code costs ~10 us a call, too much per env step.
        mu = self.local_means.ravel()[self._rows + arms]  # row offsets i * M: one gather
        return rewards_of(mu, noise_draws(rng, self.noise, mu.shape), self.noise, self.sigma)

    @property
    def noise_code(self) -> int:
        """The noise kind as the integer compiled code uses (``NOISE_CODES``)."""
        return NOISE_CODES[self.noise]

    def with_noise(self, noise: NoiseKind, sigma: float | None = None) -> MABProblem:
        """The same means under another noise model.

        Examples:
            >>> MABProblem([[0.5]], noise="bernoulli").with_noise("gaussian", 0.1).sigma
            0.1
        """
        return MABProblem(self.local_means, noise, self.sigma if sigma is None else sigma)


def _rng(seed: SeedLike) -> np.random.Generator:
    return np.random.default_rng(seed)


def zhu_synthetic(
    n_agents: int,
    n_arms: int,
    seed: SeedLike = None,
    noise: NoiseKind = "gaussian",
    sigma: float = 1.0,
    max_tries: int = 1000,
) -> MABProblem:
    """Zhu et al.'s synthetic instance (Sec. 5): ``mu[i, k]`` uniform in [0, 1].

    The paper says each agent ranks the arms differently; we enforce it by redrawing
    (at most ``max_tries`` times) until the agents' arm rankings are pairwise distinct,
    which is possible whenever ``n_agents <= n_arms!``.  The paper adds zero-mean
    Gaussian noise of variance 1, our default.

    Examples:
        >>> p = zhu_synthetic(3, 5, seed=0)
        >>> p.local_means.shape, p.noise, p.sigma
        ((3, 5), 'gaussian', 1.0)
        >>> len({tuple(np.argsort(row)) for row in p.local_means})
        3
    """
    n_agents = check_int("n_agents", n_agents, 1)
    n_arms = check_int("n_arms", n_arms, 1)
    rng = _rng(seed)
    means = rng.random((n_agents, n_arms))
    for _ in range(max_tries):
        if len({tuple(np.argsort(row)) for row in means}) == n_agents:
            break
        means = rng.random((n_agents, n_arms))
    return MABProblem(means, noise, sigma)


def homogeneous(
    n_agents: int,
    n_arms: int,
    seed: SeedLike = None,
    noise: NoiseKind = "bernoulli",
    sigma: float = 1.0,
) -> MABProblem:
    """Li & Song's homogeneous instance: one mean vector, uniform in [0, 1], for all agents.

    Examples:
        >>> p = homogeneous(4, 3, seed=1)
        >>> bool(np.all(p.local_means == p.local_means[0]))
        True
    """
    n_agents = check_int("n_agents", n_agents, 1)
    n_arms = check_int("n_arms", n_arms, 1)
    means = np.repeat(_rng(seed).random((1, n_arms)), n_agents, axis=0)
    return MABProblem(means, noise, sigma)


def biased(
    n_agents: int,
    n_arms: int,
    gap: float = 0.1,
    seed: SeedLike = None,
    noise: NoiseKind = "bernoulli",
    sigma: float = 1.0,
) -> MABProblem:
    """Global means plus agent biases that average to zero: no local rule finds the
    global best arm better than the local best arm does.

    Construction: the global means of the arms other than a random best arm ``k*`` are
    uniform in [0.25, 0.75]; ``k*``'s is their maximum plus a margin uniform in
    [gap, 2 gap]. Each agent's bias on each arm is Gaussian with a spread drawn per
    instance (uniform in [0.5 gap, 4 gap]: from almost every agent locally right to most
    misled), centred over the agents so that the average of the local means is the
    global mean exactly, then scaled down (all by one factor) as far as needed to keep
    every local mean in [0, 1]. Unlike :func:`conflicting`, nothing marks the global
    best arm in an agent's own row: no threshold separates it, the misled share and the
    decoys are random, and since the arms are exchangeable but for ``k*``'s higher
    mean, the local best arm is an agent's most likely guess
    (``tests/envs/test_problems.py`` measures every threshold and rank rule).

    Args:
        n_agents: Number of agents (>= 2: one agent's bias would be zero).
        n_arms: Number of arms (>= 2).
        gap: Smallest global gap, in (0, 0.2].
        seed: Seed of the instance.
        noise: Reward noise, see :class:`MABProblem`.
        sigma: Gaussian noise scale.

    Examples:
        >>> p = biased(10, 5, seed=0)
        >>> bool(p.min_gap >= 0.1), bool(np.allclose(p.local_means.mean(0), p.global_means))
        (True, True)
    """
    n_agents = check_int("n_agents", n_agents, 2)
    n_arms = check_int("n_arms", n_arms, 2)
    if not 0.0 < gap <= 0.2:
        raise ValueError(f"gap must lie in (0, 0.2], got {gap!r}")
    rng = _rng(seed)
    best = int(rng.integers(n_arms))
    means = rng.uniform(0.25, 0.75, size=n_arms)
    others = np.delete(means, best)
    means[best] = others.max() + rng.uniform(gap, 2 * gap)
    spread = rng.uniform(0.5 * gap, 4 * gap)
    bias = rng.normal(0.0, spread, size=(n_agents, n_arms))
    bias -= bias.mean(axis=0)
    room = np.where(bias > 0, (1.0 - means) / np.where(bias > 0, bias, 1.0), np.inf)
    room = np.minimum(room, np.where(bias < 0, means / np.where(bias < 0, -bias, 1.0), np.inf))
    scale = min(1.0, float(room.min()))
    return MABProblem(np.clip(means + scale * bias, 0.0, 1.0), noise, sigma)


def conflicting(
    n_agents: int,
    n_arms: int,
    conflict_fraction: float = 0.5,
    gap: float = 0.1,
    seed: SeedLike = None,
    noise: NoiseKind = "bernoulli",
    sigma: float = 1.0,
) -> MABProblem:
    """An instance where a chosen share of agents is locally misled.

    ``round(conflict_fraction * n_agents)`` agents have a *decoy* arm, not the global
    best, as their locally best arm (by a local margin of at least ``gap``), and the
    global best arm beats every other arm by at least ``gap`` in the average.

    Construction: every mean starts uniform in [0, 0.5]; the global best arm ``k*`` is
    a random arm; a non-conflicting agent gets ``mu[i, k*]`` uniform in [0.75, 1]; a
    conflicting agent gets its decoy (spread round-robin over the other arms) uniform in
    [0.75, 1] and ``mu[i, k*]`` that value minus a margin uniform in [gap, 2 gap].  If
    the requested global gap is not reached (too many agents sharing too few decoys),
    a ``ValueError`` says so instead of returning a weaker instance.

    Args:
        n_agents: Number of agents (>= 1).
        n_arms: Number of arms (>= 2).
        conflict_fraction: Share of agents whose locally best arm is a decoy, in [0, 1].
        gap: Guaranteed global gap and local decoy margin, in (0, 0.25].
        seed: Seed of the instance.
        noise: Reward noise, see :class:`MABProblem`.
        sigma: Gaussian noise scale.

    Examples:
        >>> p = conflicting(10, 5, conflict_fraction=0.5, gap=0.1, seed=0)
        >>> len(p.conflicting_agents), bool(p.min_gap >= 0.1)
        (5, True)
    """
    n_agents = check_int("n_agents", n_agents, 1)
    n_arms = check_int("n_arms", n_arms, 2)
    if not 0.0 <= conflict_fraction <= 1.0:
        raise ValueError(f"conflict_fraction must lie in [0, 1], got {conflict_fraction!r}")
    if not 0.0 < gap <= 0.25:
        raise ValueError(f"gap must lie in (0, 0.25], got {gap!r}")
    rng = _rng(seed)
    means = rng.uniform(0.0, 0.5, size=(n_agents, n_arms))
    best = int(rng.integers(n_arms))
    n_conflict = round(conflict_fraction * n_agents)
    agents = rng.permutation(n_agents)
    decoys = rng.permutation([k for k in range(n_arms) if k != best])
    for rank, i in enumerate(agents):
        top = rng.uniform(0.75, 1.0)
        if rank < n_conflict:
            means[i, decoys[rank % len(decoys)]] = top
            means[i, best] = top - rng.uniform(gap, 2 * gap)
        else:
            means[i, best] = top
    problem = MABProblem(means, noise, sigma)
    raw_gap = np.sort(means.mean(axis=0))[::-1]
    if problem.best_arm != best or raw_gap[0] - raw_gap[1] < gap:
        raise ValueError(
            f"conflicting(n_agents={n_agents}, n_arms={n_arms}, "
            f"conflict_fraction={conflict_fraction}, gap={gap}) cannot guarantee the global "
            f"gap: {n_conflict} misled agents share {n_arms - 1} decoy arms. Use fewer "
            "conflicting agents, more arms or a smaller gap."
        )
    return problem
