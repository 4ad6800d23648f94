"""Federated linear contextual bandit problems (Dubey & Pentland 2020, Sec. 3).

Each step every agent ``i`` is shown a decision set ``D[i, t]`` of ``K`` vectors in
``R^d``, picks one, ``x``, and gets ``y = <x, theta_i> + noise``. The *global* parameter
is ``theta = mean_i theta_i`` (equal to every ``theta_i`` in the paper's homogeneous
setting); pseudo-regret is scored against it, ``max_{x' in D[i, t]} <x', theta> -
<x, theta>``, as the paper's group pseudo-regret ``R_M(T)``.

Reading chosen (stated where a user sees it): decision sets are drawn from a finite
**pool** of feature vectors fixed with the instance, not freshly from ``R^d`` at every
step. Each step every agent gets ``K`` pool rows drawn uniformly (with replacement);
with a *best pool* (the paper's synthetic sets), exactly one of the ``K`` comes from it,
at a uniformly drawn position. A pool is what real data is (rows of a table), it makes
regret exact and cheap (``means = features @ theta`` once), and a step costs ``K``
integer draws instead of ``K d`` Gaussians. With the default pool of ``10 K`` vectors
the sets an agent sees over a run are as diverse as fresh ones for every purpose of the
estimator (``10 K >> d``).

The draws of a step, in order (the fast path's kernel
:func:`~fedbandit_env.problems.linear_kernels.draw_sets` makes them one by one,
bit for bit): with a best pool of ``B`` rows and ``P - B`` others, ``slot =
integers(0, K, N)``, ``best = integers(0, B, N)``, ``others = integers(0, P - B, (N, K - 1))``;
without one, ``integers(0, P, (N, K))``; with grouped sets, ``integers(0, P // K, N)``.

Examples:
    >>> p = dubey_synthetic(n_agents=3, dim=4, seed=0)
    >>> p.n_agents, p.dim, p.set_size, p.n_features
    (3, 4, 16, 176)
    >>> sets = p.draw_sets(np.random.default_rng(0))
    >>> sets.shape, bool(((p.global_means[sets] >= 0.7).sum(axis=1) == 1).all())
    ((3, 16), True)
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from fedbandit_env.problems.kernels import NOISE_CODES
from fedbandit_env.type_aliases import FloatArray, IntArray, SeedLike
from fedbandit_env.validation import check_int

LinearNoise = Literal["bernoulli", "gaussian"]
LINEAR_NOISE: tuple[str, ...] = get_args(LinearNoise)


def _finite_array(name: str, value: object, ndim: tuple[int, ...]) -> FloatArray:
    try:
        out = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be an array of floats, got {value!r}") from err
    if out.ndim not in ndim:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndim))} dims, got {out.shape}")
    if out.size == 0 or not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be non-empty and finite, got shape {out.shape}")
    return out


class LinearProblem:
    """A linear contextual bandit over a pool of feature vectors.

    Args:
        features: ``(P, d)`` pool of action vectors. With ``n_best > 0`` the first
            ``n_best`` rows are the *best pool*: every decision set holds exactly one of
            them.
        theta: ``(d,)`` (every agent alike) or ``(N, d)`` (agent ``i`` has ``theta_i``;
            regret is scored against their mean).
        set_size: ``K``, vectors per decision set (``>= 1``; ``>= 2`` with a best pool).
        n_agents: Agents ``N`` (needed only when ``theta`` is one vector; default 2).
        n_best: Rows of the best pool (0: sets drawn uniformly from the whole pool).
        grouped: Each set is one *group* of ``K`` consecutive pool rows (rows ``g K`` to
            ``g K + K - 1``, ``g`` uniform): one subject's ``K`` options, as in the
            hospital records (:func:`~fedbandit_env.problems.diabetes.diabetes_linear`).
        noise: ``"bernoulli"`` (``y ~ Ber(<x, theta_i>)``, means must lie in [0, 1]) or
            ``"gaussian"`` (``y = <x, theta_i> + sigma z``).
        sigma: Standard deviation of Gaussian noise (``>= 0``).

    Examples:
        >>> p = LinearProblem([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], [0.2, 0.6], set_size=2,
        ...                   n_agents=2, noise="gaussian", sigma=0.0)
        >>> p.global_means.tolist()
        [0.2, 0.6, 0.4]
        >>> p.gaps(np.array([[0, 1], [2, 0]]), np.array([0, 2])).round(6).tolist()
        [0.4, 0.0]
    """

    def __init__(
        self,
        features: object,
        theta: object,
        set_size: int,
        n_agents: int | None = None,
        n_best: int = 0,
        noise: LinearNoise = "gaussian",
        sigma: float = 0.1,
        grouped: bool = False,
    ) -> None:
        x = _finite_array("features", features, (2,))
        th = _finite_array("theta", theta, (1, 2))
        if th.ndim == 1:
            n = 2 if n_agents is None else check_int("n_agents", n_agents, 1)
            th = np.tile(th, (n, 1))
        elif n_agents is not None and check_int("n_agents", n_agents, 1) != th.shape[0]:
            raise ValueError(f"n_agents={n_agents} disagrees with theta's {th.shape[0]} rows")
        if th.shape[1] != x.shape[1]:
            raise ValueError(
                f"theta has dimension {th.shape[1]} but features have {x.shape[1]}; they must agree"
            )
        self.set_size = check_int("set_size", set_size, 1)
        self.n_best = check_int("n_best", n_best, 0)
        if self.n_best and (self.n_best >= x.shape[0] or self.set_size < 2):
            raise ValueError(
                f"a best pool needs n_best < {x.shape[0]} rows and set_size >= 2, got "
                f"n_best={n_best}, set_size={set_size}"
            )
        if grouped and (self.n_best or x.shape[0] % self.set_size):
            raise ValueError(
                f"grouped sets need n_best=0 and a pool of whole groups of set_size rows, got "
                f"{x.shape[0]} rows, set_size={set_size}, n_best={n_best}"
            )
        self.grouped = bool(grouped)
        if noise not in LINEAR_NOISE:
            raise ValueError(f"noise must be one of {LINEAR_NOISE}, got {noise!r}")
        sigma = float(sigma)
        if not (np.isfinite(sigma) and sigma >= 0.0):
            raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")
        self.features, self.theta, self.noise, self.sigma = x, th, noise, sigma
        self.local_means: FloatArray = np.ascontiguousarray(th @ x.T)  # (N, P)
        self.global_means: FloatArray = x @ th.mean(axis=0)  # (P,)
        if noise == "bernoulli" and (self.local_means.min() < 0 or self.local_means.max() > 1):
            raise ValueError(
                "Bernoulli rewards need every mean <x, theta_i> in [0, 1], got the range "
                f"[{self.local_means.min():.3g}, {self.local_means.max():.3g}]"
            )
        for a in (self.features, self.theta, self.local_means, self.global_means):
            a.setflags(write=False)

    # ------------------------------------------------------------------ shape
    @property
    def n_agents(self) -> int:
        """Agents ``N``."""
        return int(self.theta.shape[0])

    @property
    def dim(self) -> int:
        """Dimension ``d`` of the action vectors."""
        return int(self.features.shape[1])

    @property
    def n_features(self) -> int:
        """Rows ``P`` of the pool."""
        return int(self.features.shape[0])

    @property
    def feature_bound(self) -> float:
        """``L``: the largest norm of a pool vector."""
        return float(np.linalg.norm(self.features, axis=1).max())

    @property
    def reward_bounds(self) -> tuple[float, float]:
        """Smallest and largest reward the noise can produce."""
        if self.noise == "bernoulli":
            return (0.0, 1.0)
        if self.sigma > 0:
            return (-np.inf, np.inf)
        return (float(self.local_means.min()), float(self.local_means.max()))

    @property
    def draw_code(self) -> int:
        """How compiled code draws sets: ``n_best`` (>= 0), or -1 for grouped sets."""
        return -1 if self.grouped else self.n_best

    @property
    def top_rows(self) -> int:
        """``n_best`` where every best row's global mean exceeds every other row's (then a
        drawn set's best vector is its one row below ``n_best``: the compiled step reads
        a set's regret off its lowest row instead of the ``K`` means), else 0 (grouped or
        uniform sets, or best rows that do not stand apart).

        Examples:
            >>> p = LinearProblem(np.eye(3), [1.0, 0.5, 0.0], set_size=2, n_best=1)
            >>> p.top_rows, LinearProblem(np.eye(3), [0.0, 0.5, 1.0], set_size=2,
            ...                           n_best=1).top_rows
            (1, 0)
        """
        b = self.n_best
        if self.grouped or b <= 0 or b >= self.n_features:
            return 0
        g = self.global_means
        return b if bool(g[:b].min() > g[b:].max()) else 0

    @property
    def noise_code(self) -> int:
        """The noise kind as compiled code uses it (``NOISE_CODES``)."""
        return NOISE_CODES[self.noise]

    # ------------------------------------------------------------------ draws
    def draw_sets(self, rng: np.random.Generator) -> IntArray:
        """Every agent's decision set of this step, as pool rows ``(N, K)``.

        Examples:
            >>> p = LinearProblem(np.eye(3), [1.0, 0.0, 0.0], set_size=2, n_best=1)
            >>> sets = p.draw_sets(np.random.default_rng(1))
            >>> sets.shape, (sets == 0).sum(axis=1).tolist()
            ((2, 2), [1, 1])
        """
        n, k, b, p = self.n_agents, self.set_size, self.n_best, self.n_features
        if self.grouped:
            return rng.integers(0, p // k, n)[:, None] * k + np.arange(k)
        if not b:
            return rng.integers(0, p, (n, k))
        slot = rng.integers(0, k, n)
        best = rng.integers(0, b, n)
        others = b + rng.integers(0, p - b, (n, k - 1))
        sets = np.empty((n, k), dtype=np.int64)
        for i in range(n):  # N small inserts: cheaper than a fancy-index mask here
            s = slot[i]
            sets[i, :s] = others[i, :s]
            sets[i, s] = best[i]
            sets[i, s + 1 :] = others[i, s:]
        return sets

    def sample(self, rows: IntArray, rng: np.random.Generator) -> FloatArray:
        """One reward per agent: agent ``i`` chose pool row ``rows[i]`` (the draws of
        :func:`~fedbandit_env.problems.kernels.draw_reward`, vectorized).

        Examples:
            >>> p = LinearProblem(np.eye(2), [1.0, 0.0], set_size=1, noise="bernoulli")
            >>> p.sample(np.array([0, 1]), np.random.default_rng(0)).tolist()
            [1.0, 0.0]
        """
        mu = self.local_means[np.arange(self.n_agents), rows]
        if self.noise == "bernoulli":
            return (rng.random(mu.shape[0]) < mu).astype(np.float64)
        return mu + self.sigma * rng.standard_normal(mu.shape[0])

    def gaps(self, sets: IntArray, chosen: IntArray) -> FloatArray:
        """Pseudo-regret of choosing pool rows ``chosen`` from ``sets``, per agent."""
        g = self.global_means
        return g[sets].max(axis=1) - g[chosen]


def _unit(v: FloatArray) -> FloatArray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _vectors(
    theta: FloatArray, lo: float, hi: float, count: int, rng: np.random.Generator
) -> FloatArray:
    """``count`` vectors ``x`` with ``||x|| <= 1`` and ``<x, theta>`` uniform in
    ``[lo, hi]`` (``theta`` a unit vector): ``x = v theta + s w`` with ``w`` a uniform
    unit vector orthogonal to ``theta`` and ``s`` uniform in ``[0, sqrt(1 - v^2)]``."""
    v = rng.uniform(lo, hi, count)
    w = rng.standard_normal((count, theta.size))
    w -= np.outer(w @ theta, theta)
    w = _unit(w)
    s = rng.uniform(0.0, 1.0, count) * np.sqrt(1.0 - v * v)
    return v[:, None] * theta[None, :] + s[:, None] * w


def dubey_synthetic(
    n_agents: int,
    dim: int = 10,
    set_size: int | None = None,
    seed: SeedLike | np.random.Generator = None,
    pool_size: int | None = None,
    heterogeneity: float = 0.0,
    noise: LinearNoise = "bernoulli",
    sigma: float = 0.1,
    best: tuple[float, float] = (0.7, 0.8),
    others: tuple[float, float] = (0.5, 0.6),
) -> LinearProblem:
    """Dubey & Pentland's synthetic sets (Sec. 4.4): ``L = S = 1``, ``K ~ d^2`` actions,
    the best one's mean in ``[0.7, 0.8]``, the others' in ``[0.5, 0.6]``, Bernoulli rewards.

    Readings chosen: ``theta`` is uniform on the unit *sphere* (the paper says "in
    ``B_d(1)``"; a shorter ``theta`` could make a mean of 0.8 unreachable with
    ``||x|| <= 1``); an action is ``v theta + s w`` (``v`` its mean, ``w`` a uniform
    direction orthogonal to ``theta``, ``s`` uniform in ``[0, sqrt(1 - v^2)]``); sets are
    drawn from a pool (module docstring) of ``pool_size`` others (default ``10 K``) and
    ``max(1, pool_size // 10)`` best vectors. ``heterogeneity = h > 0`` gives agent
    ``i`` the parameter ``theta + h c_i`` with centred ``c_i`` of norm at most 1, so the
    global ``theta`` is unchanged and local means move by at most ``h`` (``h <= 0.2``
    keeps Bernoulli means in [0, 1]).

    Examples:
        >>> p = dubey_synthetic(4, dim=3, seed=1, heterogeneity=0.1)
        >>> round(float(np.linalg.norm(p.theta.mean(axis=0))), 6)   # the global theta
        1.0
        >>> float(np.abs(p.local_means - p.global_means).max()) <= 0.1 + 1e-12
        True
    """
    n_agents = check_int("n_agents", n_agents, 1)
    dim = check_int("dim", dim, 2)
    k = dim * dim if set_size is None else check_int("set_size", set_size, 2)
    pool = 10 * k if pool_size is None else check_int("pool_size", pool_size, 1)
    h = float(heterogeneity)
    if not (np.isfinite(h) and 0.0 <= h <= 0.2):
        raise ValueError(f"heterogeneity must lie in [0, 0.2], got {heterogeneity!r}")
    for name, (lo, hi) in (("best", best), ("others", others)):
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"{name} must be a range 0 <= low <= high <= 1, got {(lo, hi)!r}")
    rng = np.random.default_rng(seed)
    theta = _unit(rng.standard_normal(dim))
    n_best = max(1, pool // 10)
    pool_best = _vectors(theta, best[0], best[1], n_best, rng)
    pool_other = _vectors(theta, others[0], others[1], pool, rng)
    thetas = np.tile(theta, (n_agents, 1))
    if h > 0 and n_agents > 1:
        c = rng.standard_normal((n_agents, dim))
        c -= c.mean(axis=0)
        c /= np.linalg.norm(c, axis=1).max()
        thetas = thetas + h * c
    return LinearProblem(
        np.vstack([pool_best, pool_other]), thetas, k, n_best=n_best, noise=noise, sigma=sigma
    )


def from_features(
    features: object,
    theta: object,
    set_size: int,
    n_agents: int = 2,
    sigma: float = 0.1,
) -> LinearProblem:
    """A problem over a user's table of feature vectors (real data plugs in here):
    every decision set is ``set_size`` rows drawn uniformly, rewards Gaussian around
    ``<x, theta>``.

    Examples:
        >>> p = from_features(np.random.default_rng(0).random((50, 3)), [0.2, 0.3, 0.1], 5)
        >>> p.n_best, p.set_size, p.n_agents
        (0, 5, 2)
    """
    return LinearProblem(features, theta, set_size, n_agents=n_agents, sigma=sigma)


__all__ = ["LINEAR_NOISE", "LinearNoise", "LinearProblem", "dubey_synthetic", "from_features"]
