"""Zhu et al.'s real-data problem (Sec. 5.2, Fig. 2(c)): the UCI "Diabetes 130-US
hospitals" records as a federated bandit of hospitals choosing medications.

Data: Strack et al. (2014), UCI id 296, CC BY 4.0 (attribution in
``fedbandit_env/data/README.md``). The package ships one byte per record
(``fedbandit_env/data/diabetes.npz``, rebuilt from the archive by
:mod:`fedbandit_env.problems.diabetes_build`), so an installed wheel needs no raw data.

The paper's construction, and where we chose between readings:

- **Arms** (five): steady insulin; steady metformin; a steady dose of one of
  {repaglinide, glipizide, rosiglitazone, acarbose, miglitol, troglitazone}; of one of
  the fourteen others the paper lists (its "sitagliptin" is the file's ``citoglipton``;
  ``glyburide`` is listed twice); no medication at all. Only ``No`` and ``Steady`` count
  ("we only focus on the sub-feature No and Steady"): a record with any dose ``Up`` or
  ``Down`` is left out, as is one with ``tolazamide``, which no group lists.
- **Overlapping groups.** A patient can be steady on drugs of several groups (insulin
  and metformin, say). ``arms="exclusive"`` (default) keeps a record only as a sample
  of the one group it is steady on, so every arm is one treatment; ``"overlap"`` counts
  it for each of its groups. The means differ by <= 0.02 and the best arm is the same
  (group 3 in both readings).
- **Reward**: 1 for readmission after more than 30 days, 0 for "<30" and for no record
  (the paper's mapping).
- **Hospitals**: the paper "randomly divide[s] the samples into 3 equal-sized sets" yet
  reports that local bias "occurs when the dataset is separated ... according to the
  order in which the samples appear". A random split gives three near-identical
  hospitals (every local best arm is the global one), so it cannot show what the
  figure is about; ``split="order"`` (default) cuts the records in file order into
  ``n_agents`` equal parts (hospital 2 of 3 then prefers arm 4), ``"random"`` shuffles
  them first with ``seed``.
- **Rewards during play**: agent ``i`` pulling arm ``k`` draws one of its own records
  of that arm uniformly with replacement, i.e. a Bernoulli draw of the records'
  readmission rate: :class:`~fedbandit_env.problems.mab.MABProblem` with those rates as
  ``local_means`` and Bernoulli noise is exactly that bootstrap.

Examples:
    >>> p = diabetes()
    >>> p.n_agents, p.n_arms, p.best_arm, p.local_best_arms.tolist()
    (3, 5, 2, [2, 3, 2])
    >>> round(p.min_gap, 4)
    0.016
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np

from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.problems.mab import MABProblem
from fedbandit_env.type_aliases import FloatArray, IntArray

DATA_PATH = Path(__file__).resolve().parent.parent / "data" / "diabetes.npz"
"""The shipped table: one byte per record (see :data:`BITS`)."""

MEDICATIONS: tuple[str, ...] = (
    "metformin", "repaglinide", "nateglinide", "chlorpropamide", "glimepiride",
    "acetohexamide", "glipizide", "glyburide", "tolbutamide", "pioglitazone",
    "rosiglitazone", "acarbose", "miglitol", "troglitazone", "tolazamide", "examide",
    "citoglipton", "insulin", "glyburide-metformin", "glipizide-metformin",
    "glimepiride-pioglitazone", "metformin-rosiglitazone", "metformin-pioglitazone",
)  # fmt: skip
"""The 23 medication columns of the records, in the file's order."""

ARM_GROUPS: dict[str, tuple[str, ...]] = {
    "insulin": ("insulin",),
    "metformin": ("metformin",),
    "group_3": ("repaglinide", "glipizide", "rosiglitazone", "acarbose", "miglitol",
                "troglitazone"),
    "group_4": ("nateglinide", "chlorpropamide", "glyburide", "examide", "glimepiride",
                "acetohexamide", "tolbutamide", "pioglitazone", "citoglipton",
                "glyburide-metformin", "glipizide-metformin", "glimepiride-pioglitazone",
                "metformin-rosiglitazone", "metformin-pioglitazone"),
    "none": MEDICATIONS,
}  # fmt: skip
"""Zhu et al.'s five arms (Sec. 5.2), in their order; ``none``: every medication ``No``."""

ARMS: tuple[str, ...] = tuple(ARM_GROUPS)
BITS: dict[str, int] = {**{name: b for b, name in enumerate(ARMS)}, "reward": 5, "outside": 6}
"""Bit of each flag in a record's byte."""

Split = Literal["order", "random"]
ArmReading = Literal["exclusive", "overlap"]


FEATURES: tuple[str, ...] = (
    "age_decade", "female", "days_in_hospital", "medications", "prior_inpatient",
    "diagnoses", "hba1c_measured",
)  # fmt: skip
"""The patient features shipped per record (the linear problem's contexts)."""

DIABETES_DIM = 5 * (len(FEATURES) + 1)
"""Dimension of the linear problem: a bias and the features, in one block per arm."""

FEATURE_SCALE = np.array([9.0, 1.0, 14.0, 40.0, 5.0, 16.0, 1.0])
"""Each feature is divided by this and capped at 1 (medications at 40, visits at 5)."""


@lru_cache(maxsize=1)
def _data() -> tuple[IntArray, IntArray]:
    with np.load(DATA_PATH) as data:
        codes, features = data["codes"], data["features"]
    codes.setflags(write=False)
    features.setflags(write=False)
    return codes, features


def records() -> IntArray:
    """The shipped records, one byte each, in the file's order (read-only).

    Examples:
        >>> records().shape
        (101766,)
    """
    return _data()[0]


def arm_samples(arms: ArmReading = "exclusive") -> tuple[IntArray, FloatArray, IntArray]:
    """Each record's arm (-1: a sample of no arm) and reward, under a reading of the
    overlapping groups; with ``"overlap"`` a record of several groups is repeated.

    Returns:
        ``(arm, reward, order)``: arrays over samples; ``order`` is each sample's record
        index (for the split).

    Examples:
        >>> arm, reward, order = arm_samples()
        >>> np.bincount(arm[arm >= 0]).tolist()
        [16261, 4223, 5311, 6426, 23403]
    """
    if arms not in ("exclusive", "overlap"):
        raise ValueError(f"arms must be 'exclusive' or 'overlap', got {arms!r}")
    codes = records()
    member = (codes[:, None] >> np.arange(len(ARMS))) & 1 == 1  # (records, 5)
    member &= (codes[:, None] >> BITS["outside"]) & 1 == 0
    if arms == "exclusive":
        member &= member.sum(axis=1, keepdims=True) == 1
    rec, arm = np.nonzero(member)
    reward = ((codes[rec] >> BITS["reward"]) & 1).astype(np.float64)
    return arm.astype(np.int64), reward, rec.astype(np.int64)


def hospitals(n_agents: int, split: Split = "order", seed: int = 0) -> IntArray:
    """The hospital of every record: ``n_agents`` equal parts of the records, in file
    order or shuffled with ``seed``.

    Examples:
        >>> np.bincount(hospitals(3)).tolist()
        [33922, 33922, 33922]
    """
    n_records = records().size
    position = np.arange(n_records)
    if split == "random":
        position = np.random.default_rng(seed).permutation(n_records)
    return position * n_agents // n_records


def readmission_table(
    n_agents: int = 3, split: Split = "order", arms: ArmReading = "exclusive", seed: int = 0
) -> tuple[FloatArray, IntArray]:
    """Per hospital and arm: the share of its records rewarded 1, and how many records.

    Examples:
        >>> means, counts = readmission_table()
        >>> counts.sum(axis=0).tolist()
        [16261, 4223, 5311, 6426, 23403]
    """
    if isinstance(n_agents, bool) or not isinstance(n_agents, int) or n_agents < 1:
        raise ValueError(f"n_agents must be an int >= 1, got {n_agents!r}")
    if split not in ("order", "random"):
        raise ValueError(f"split must be 'order' or 'random', got {split!r}")
    arm, reward, rec = arm_samples(arms)
    hospital = hospitals(n_agents, split, seed)[rec]
    counts = np.zeros((n_agents, len(ARMS)), dtype=np.int64)
    ones = np.zeros((n_agents, len(ARMS)))
    np.add.at(counts, (hospital, arm), 1)
    np.add.at(ones, (hospital, arm), reward)
    if (counts == 0).any():
        raise ValueError(f"with n_agents={n_agents} a hospital has no record of some arm")
    return ones / counts, counts


def diabetes(
    n_agents: int = 3, split: Split = "order", arms: ArmReading = "exclusive", seed: int = 0
) -> MABProblem:
    """Zhu et al.'s Fig. 2(c) problem: ``n_agents`` hospitals, five medication arms,
    Bernoulli rewards with each hospital's readmission rates (module docstring: the
    readings).

    Examples:
        >>> p = diabetes()
        >>> [round(float(m), 3) for m in p.global_means]
        [0.341, 0.326, 0.395, 0.379, 0.309]
    """
    means, _ = readmission_table(n_agents, split, arms, seed)
    return MABProblem(means, noise="bernoulli")


def patient_contexts() -> FloatArray:
    """Every record's context: a bias and the :data:`FEATURES` scaled to [0, 1], divided by
    ``sqrt(8)`` so that ``||z|| <= 1`` (Dubey & Pentland's ``L = 1``).

    Examples:
        >>> z = patient_contexts()
        >>> z.shape, bool((np.linalg.norm(z, axis=1) <= 1 + 1e-12).all())
        ((101766, 8), True)
    """
    scaled = np.minimum(_data()[1] / FEATURE_SCALE, 1.0)
    z = np.hstack([np.ones((scaled.shape[0], 1)), scaled])
    return z / np.sqrt(z.shape[1])


def diabetes_linear(
    n_agents: int = 3,
    pool_size: int = 400,
    seed: int = 0,
    split: Split = "order",
    arms: ArmReading = "exclusive",
    ridge: float = 1.0,
) -> LinearProblem:
    """The same records as a federated *linear* contextual bandit (patient features as
    contexts, Dubey & Pentland's setting).

    An action is a (patient, medication) pair, ``x = e_k (x) z``: the patient's context
    ``z`` (:func:`patient_contexts`, 8 numbers) in the block of medication arm ``k``, so
    ``d = 5 * 8 = 40`` and ``||x|| <= 1``. Hospital ``i``'s parameter ``theta_i`` is, block
    by block, the ridge regression (penalty ``ridge``) of readmission after 30 days on
    ``z`` over its own records of that medication (its local bias); the global ``theta``
    is their mean. The pool is ``pool_size`` patients drawn with ``seed`` from the records
    of some arm; each step a hospital meets one of them (uniformly) and its decision set
    is that patient's five medications (``grouped`` sets of ``K = 5``). Rewards are
    Bernoulli with mean ``<x, theta_i>``. Reading chosen: the fitted linear model is the
    ground truth, because a record holds only the one treatment its patient got (no
    counterfactual to replay); ``split="random"`` draws other hospitals for held-out
    instances.

    Examples:
        >>> p = diabetes_linear()
        >>> p.n_agents, p.dim, p.set_size, p.n_features
        (3, 40, 5, 2000)
        >>> p.draw_sets(np.random.default_rng(0))[0].tolist()   # one patient, 5 medications
        [1700, 1701, 1702, 1703, 1704]
        >>> bool(0 <= p.local_means.min() and p.local_means.max() <= 1)
        True
    """
    arm, reward, rec = arm_samples(arms)
    hospital = hospitals(n_agents, split, seed)[rec]
    z = patient_contexts()[rec]
    k, f = len(ARMS), z.shape[1]
    theta = np.zeros((n_agents, k * f))
    for i in range(n_agents):
        for a in range(k):
            rows = (hospital == i) & (arm == a)
            zz = z[rows]
            gram = zz.T @ zz + ridge * np.eye(f)
            theta[i, a * f : (a + 1) * f] = np.linalg.solve(gram, zz.T @ reward[rows])
    chosen = np.random.default_rng(seed).choice(rec.size, size=pool_size, replace=False)
    pool = np.zeros((pool_size * k, k * f))
    for a in range(k):
        pool[a::k, a * f : (a + 1) * f] = z[chosen]
    return LinearProblem(pool, theta, set_size=k, noise="bernoulli", grouped=True)
