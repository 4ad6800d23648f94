"""Differentially private mechanisms: vectorized, seeded, with their epsilon.

Threat model: an agent's own reward stream is the secret. Two streams are neighbours
when they differ in one observation (one step's reward, by at most ``sensitivity``);
whatever leaves the mechanism (released sums, and everything computed from them:
means, indices, arms, messages) must be ``epsilon``-DP with respect to that change.

Noise sources (:data:`Noise`): ``"seeded"`` noise comes from a stream spawned from the
run's seed (``fedbandit_env.seeding``), so that runs replay and the two speeds agree;
that protects a reward only from observers who do not know the seed (whoever knows it
regenerates the noise and subtracts it). ``"secure"`` noise comes from fresh operating-
system entropy, is never recorded, and does not replay.

These are *idealised* floating-point mechanisms: noise is drawn with NumPy's
``Generator.laplace`` / ``normal`` in double precision. They are not hardened against
floating-point attacks on the low-order bits (Mironov, CCS 2012); use them to study
privacy-utility trade-offs, not to protect real data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from fedbandit_env.privacy.tree_kernels import tree_add, tree_complete, tree_prefix_all
from fedbandit_env.type_aliases import BoolArray, FloatArray, IntArray
from fedbandit_env.validation import check_int


def _check_positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise TypeError(f"{name} must be a float, got {type(value).__name__} {value!r}")
    if not (value > 0 and np.isfinite(value)):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def clip_range(
    clip: tuple[float, float] | None, bounds: tuple[float, float], owner: str
) -> tuple[float, float]:
    """The range a private mechanism clips rewards to, and calibrates its noise for.

    Every private policy and wrapper calls this, on both paths: ``clip`` if given, else
    the env's declared reward ``bounds``; either way it must be finite, since the
    sensitivity is its width. Unbounded rewards (Gaussian noise) without a clip range
    are refused rather than privatised with a sensitivity that does not hold.

    Raises:
        ValueError: Naming ``owner``, for an infinite or empty range.

    Examples:
        >>> clip_range(None, (0.0, 1.0), "CDPMAB"), clip_range((-1, 2), (0.0, 1.0), "x")
        ((0.0, 1.0), (-1.0, 2.0))
        >>> clip_range(None, (-np.inf, np.inf), "CDPMAB")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: CDPMAB privatises rewards, so they need a finite range: the env's ...
    """
    if clip is not None:
        try:
            lo, hi = (float(v) for v in clip)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{owner}: clip must be a pair (low, high), got {clip!r}") from err
        what = f"clip={clip!r}"
    else:
        lo, hi = (float(v) for v in bounds)
        what = f"the env's rewards lie in [{lo:g}, {hi:g}]"
    if np.isfinite(lo) and np.isfinite(hi) and lo < hi:
        return lo, hi
    why = " (unbounded noise)" if clip is None else ""
    raise ValueError(
        f"{owner} privatises rewards, so they need a finite range: {what}{why}; give a "
        "clip range (clip=(low, high), Scenario(clip=...), fedbandit --clip LOW,HIGH)"
    )


def tree_levels(horizon: int) -> int:
    """Number of tree nodes that cover one item over ``horizon`` steps: ``floor(log2 T) + 1``.

    Zhu et al. calibrate with ``ceil(log T)``, one level short when ``T`` is a power of
    two (``ALGORITHMS.md``, section 1); we calibrate with this exact count.

    Examples:
        >>> [tree_levels(t) for t in (1, 2, 3, 4, 7, 8, 1000, 1024)]
        [1, 2, 2, 3, 3, 4, 10, 11]
    """
    return int(check_int("horizon", horizon, 1)).bit_length()


def tree_noise_variance(horizon: int, epsilon: float, sensitivity: float) -> float:
    """A bound on the variance of the tree mechanism's noise on one private prefix sum:
    at most :func:`tree_levels` nodes, each Laplace of scale
    ``b = levels * sensitivity / epsilon`` (variance ``2 b^2``). What the cooperative
    private policies and ``TeamPosterior`` add to a posterior's variance.

    Examples:
        >>> tree_noise_variance(8, 1.0, 1.0)  # 4 levels, b = 4: 4 * 2 * 16
        128.0
    """
    levels = tree_levels(horizon)
    b = levels * float(sensitivity) / float(epsilon)
    return float(levels * 2.0 * b * b)


TREE_FALSE_DROP = 1e-9
"""The chance, per side, that a receiver drops an honest private sum: the bound of
:func:`tree_sum_slack`."""


def tree_sum_slack(
    horizon: int, epsilon: float, sensitivity: float, false_drop: float = TREE_FALSE_DROP
) -> float:
    """How far outside ``[low n, high n]`` (the clipped range of ``n`` rewards) an
    honest tree-noised prefix sum may lie: the Chernoff bound on the sum of at most
    ``L`` (:func:`tree_levels`) Laplace nodes of scale ``b = L sensitivity / epsilon``,
    ``P(S > x) <= min_u (1 - u^2)^-L exp(-u x / b)``, set to ``false_drop``. A receiver
    that drops sums beyond it keeps every honest release but with that chance; a liar
    can still shift a sum by up to this much (about 8.5 standard deviations of the
    tree's noise at ``T = 2000``).

    Examples:
        >>> round(tree_sum_slack(2000, 1.0, 1.0), 1)
        437.2
    """
    levels = tree_levels(horizon)
    b = levels * float(sensitivity) / float(epsilon)
    u = np.linspace(0.01, 0.99, 99)
    x = (levels * -np.log1p(-u * u) + math.log(1.0 / false_drop)) * b / u
    return float(x.min())


def tree_epsilon_spent(steps: Sequence[int] | IntArray, horizon: int, epsilon: float) -> FloatArray:
    """Privacy a tree-mechanism stream has spent by each step ``t`` of ``steps``.

    By step ``t`` an item lies in at most ``min(L, floor(log2 t) + 1)`` completed
    blocks (``L`` = :func:`tree_levels` of the horizon), each costing ``epsilon / L``;
    the spending reaches ``epsilon`` once ``t`` has as many bits as ``T``.
    :meth:`TreeMechanism.epsilon_spent` is this at its own step (calibrated levels).

    Examples:
        >>> tree_epsilon_spent([0, 1, 2, 3, 4, 8], horizon=8, epsilon=1.0).tolist()
        [0.0, 0.25, 0.5, 0.5, 0.75, 1.0]
    """
    depth = tree_levels(horizon)
    touched = [min(depth, int(t).bit_length()) for t in np.asarray(steps).ravel()]
    return np.asarray(touched, dtype=np.float64) * (epsilon / depth)


@dataclass(frozen=True)
class LaplaceMechanism:
    """Adds ``Lap(sensitivity / epsilon)`` noise: ``epsilon``-DP for one release.

    Examples:
        >>> mech = LaplaceMechanism(epsilon=1.0)
        >>> mech.scale
        1.0
        >>> mech.release(np.zeros(3), np.random.default_rng(0)).shape
        (3,)
    """

    epsilon: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        _check_positive("epsilon", self.epsilon)
        _check_positive("sensitivity", self.sensitivity)

    @property
    def scale(self) -> float:
        """Laplace scale ``b = sensitivity / epsilon``."""
        return self.sensitivity / self.epsilon

    def release(self, values: FloatArray, rng: np.random.Generator) -> FloatArray:
        """``values`` plus independent Laplace noise of scale :attr:`scale`."""
        values = np.asarray(values, dtype=np.float64)
        return values + rng.laplace(0.0, self.scale, size=values.shape)


@dataclass(frozen=True)
class GaussianMechanism:
    """Adds ``N(0, sigma^2)`` with the classical calibration for ``(epsilon, delta)``-DP.

    ``sigma = sensitivity * sqrt(2 log(1.25 / delta)) / epsilon`` (Dwork & Roth, Thm A.1,
    valid for ``epsilon < 1``).

    Examples:
        >>> round(GaussianMechanism(epsilon=0.5, delta=1e-5).sigma, 3)
        9.69
    """

    epsilon: float
    delta: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        _check_positive("epsilon", self.epsilon)
        _check_positive("sensitivity", self.sensitivity)
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta must lie in (0, 1), got {self.delta!r}")
        if self.epsilon >= 1.0:
            raise ValueError(
                f"the classical Gaussian calibration needs epsilon < 1, got {self.epsilon}"
            )

    @property
    def sigma(self) -> float:
        """Standard deviation of the noise."""
        return float(self.sensitivity * np.sqrt(2.0 * np.log(1.25 / self.delta)) / self.epsilon)

    @property
    def mu(self) -> float:
        """``sensitivity / sigma``: the mechanism is exactly ``mu``-Gaussian-DP."""
        return self.sensitivity / self.sigma

    def epsilon_at(self, delta: float) -> float:
        """The smallest epsilon this mechanism satisfies at ``delta``: its exact privacy
        curve, ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle &
        Wang 2018, Thm 8), solved for ``eps``. The classical calibration over-provides
        (``epsilon_at(self.delta) < self.epsilon``); audits test this tight curve, so a
        mechanism with 10% less noise than :attr:`sigma` is caught.

        Examples:
            >>> mech = GaussianMechanism(epsilon=0.9, delta=0.1)
            >>> round(mech.mu, 3), round(mech.epsilon_at(0.1), 3), round(mech.epsilon_at(0.05), 3)
            (0.4, 0.157, 0.348)
        """
        from scipy import optimize, stats

        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        mu = self.mu

        def excess(eps: float) -> float:
            return float(
                stats.norm.cdf(-eps / mu + mu / 2)
                - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
                - delta
            )

        if excess(0.0) <= 0.0:
            return 0.0
        high = 1.0
        while excess(high) > 0.0:
            high *= 2.0
        return float(optimize.brentq(excess, 0.0, high, xtol=1e-12))

    def release(self, values: FloatArray, rng: np.random.Generator) -> FloatArray:
        """``values`` plus independent Gaussian noise of standard deviation :attr:`sigma`."""
        values = np.asarray(values, dtype=np.float64)
        return values + rng.normal(0.0, self.sigma, size=values.shape)


Estimator = Literal["dyadic", "honaker"]

Noise = Literal["seeded", "secure"]
"""Where a mechanism's noise comes from: ``"seeded"``, a stream spawned from the run's
seed (replayable: whoever knows the seed can regenerate the noise and subtract it, so
the guarantee assumes the seed is secret); ``"secure"``, fresh operating-system entropy
at every reset (not recorded, not replayable; the seed then reveals nothing)."""
NOISES: tuple[str, ...] = ("seeded", "secure")


def check_noise(noise: Any, owner: str) -> Noise:
    """``noise`` if it is ``"seeded"`` or ``"secure"``, else a ``ValueError`` naming
    ``owner``.

    Examples:
        >>> check_noise("secure", "PrivateRewards")
        'secure'
    """
    if noise not in NOISES:
        raise ValueError(f"{owner}: noise must be 'seeded' or 'secure', got {noise!r}")
    return noise


def fresh_generator() -> np.random.Generator:
    """A generator on fresh operating-system entropy: the one source of ``"secure"``
    noise (tests replace it with a seeded source unrelated to any run's seed).

    Examples:
        >>> fresh_generator().random() != fresh_generator().random()
        True
    """
    return np.random.default_rng()


def noise_generator(noise: Noise, seeded: Any) -> np.random.Generator:
    """The generator of a mechanism's noise: ``default_rng(seeded)`` for ``"seeded"``
    noise; for ``"secure"``, a generator on fresh OS entropy, whatever ``seeded`` is.

    Examples:
        >>> a, b = noise_generator("seeded", 3).random(), noise_generator("seeded", 3).random()
        >>> c, d = noise_generator("secure", 3).random(), noise_generator("secure", 3).random()
        >>> a == b, c == d
        (True, False)
    """
    if noise == "secure":
        return fresh_generator()
    return seeded if isinstance(seeded, np.random.Generator) else np.random.default_rng(seeded)


class TreeMechanism:
    """Binary-tree continual counting (Zhu et al., Algorithms 2-3) over many streams at once.

    Each of ``n_streams`` streams receives one value per step; after step ``t`` the
    mechanism releases a private prefix sum of every stream. The prefix ``[1, t]`` is
    the union of the dyadic blocks ``(q(t'), t']`` obtained by clearing the lowest set
    bit of ``t`` repeatedly (Algorithm 2). Each block gets one ``Lap(b)`` draw when it
    is completed, reused afterwards (Algorithm 3's map ``P``), and only if the block
    holds at least one observation (``present``); a block with none is exactly 0.

    Calibration: one item lies in at most ``L = floor(log2 T) + 1`` blocks (one per
    level), so ``b = L * sensitivity / epsilon`` makes the whole released stream
    ``epsilon``-DP. ``levels`` can be set lower only to build deliberately broken
    mechanisms for audits.

    ``estimator="honaker"`` noises *every* node of the tree (still one node per level
    per item, so the same privacy) and replaces each completed node by the inverse-
    variance combination of its own noisy value and the sum of its children's
    estimates (Honaker 2015, bottom-up pass), before summing the dyadic cover.

    Args:
        n_streams: Number of independent streams ``S``.
        horizon: Largest step ``T`` (fixes the number of levels).
        epsilon: Privacy of each whole stream.
        rng: Generator of the noise.
        sensitivity: Largest change of one item between neighbouring streams.
        estimator: ``"dyadic"`` (the paper) or ``"honaker"`` (lower variance).
        levels: Override of the calibration level count (audits only).

    Examples:
        >>> tree = TreeMechanism(2, horizon=8, epsilon=1.0, rng=np.random.default_rng(0))
        >>> tree.levels, tree.scale
        (4, 4.0)
        >>> out = [tree.step(np.array([1.0, 0.0]), np.array([True, False])) for _ in range(3)]
        >>> [float(o[1]) for o in out]          # stream 1 never observed: exact zeros
        [0.0, 0.0, 0.0]
    """

    def __init__(
        self,
        n_streams: int,
        horizon: int,
        epsilon: float,
        rng: np.random.Generator,
        sensitivity: float = 1.0,
        estimator: Estimator = "dyadic",
        levels: int | None = None,
    ) -> None:
        self.n_streams = check_int("n_streams", n_streams, 1)
        self.horizon = check_int("horizon", horizon, 1)
        self.epsilon = _check_positive("epsilon", epsilon)
        self.sensitivity = _check_positive("sensitivity", sensitivity)
        if estimator not in ("dyadic", "honaker"):
            raise ValueError(f"estimator must be 'dyadic' or 'honaker', got {estimator!r}")
        self.estimator: Estimator = estimator
        self.depth = tree_levels(self.horizon)
        self.levels = self.depth if levels is None else check_int("levels", levels, 1)
        self.scale = self.levels * self.sensitivity / self.epsilon
        self.rng = rng
        shape = (self.n_streams, self.depth)
        self._acc = np.zeros(shape)
        self._seen = np.zeros(shape, dtype=bool)
        self._node = np.zeros(shape)
        self._var = np.zeros(shape)
        self.t = 0

    def step(self, values: FloatArray, present: BoolArray | None = None) -> FloatArray:
        """Add this step's value of every stream; return the private prefix sums.

        Args:
            values: ``(n_streams,)`` values of this step.
            present: ``(n_streams,)`` whether each stream holds an observation this step
                (default: all). Values of absent streams are ignored.
        """
        if self.t >= self.horizon:
            raise RuntimeError(f"TreeMechanism is past its horizon {self.horizon}")
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n_streams,):
            raise ValueError(f"values must have shape ({self.n_streams},), got {values.shape}")
        if present is None:
            streams = np.arange(self.n_streams)
        else:
            streams = np.flatnonzero(np.asarray(present, dtype=bool))
        self.t += 1
        tree_add(self._acc, self._seen, streams, values[streams])
        tree_complete(
            self._acc,
            self._seen,
            self._node,
            self._var,
            self.t,
            self.scale,
            self.estimator == "honaker",
            self.rng,
        )
        return self.prefix()

    def prefix(self) -> FloatArray:
        """The current private prefix sums (sum of the dyadic cover of ``t``)."""
        return tree_prefix_all(self._node, self.t)

    def epsilon_spent(self) -> float:
        """Privacy spent so far by each stream: ``epsilon' * (levels any item touched)``.

        An item released by step ``t`` lies in at most ``floor(log2 t) + 1`` completed
        blocks, each costing ``sensitivity / scale``.
        """
        touched = min(self.depth, self.t.bit_length())
        return touched * self.sensitivity / self.scale
