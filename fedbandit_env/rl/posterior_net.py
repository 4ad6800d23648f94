"""The posterior net's forward pass in NumPy, and its saved weights.

The posterior net (:class:`~fedbandit_env.rl.posterior_policy.PosteriorArmPolicy`) is a
learned Thompson sampler: for every arm it outputs the mean and the spread of a normal
*score*, as corrections of the team posterior's::

    h     = tanh(W2 tanh(W1 (x * scales) + b1) + b2)          # the arm's embedding
    mean  = m + s * (b0 + wm . h + bm)                         # m, s: the team posterior's
    sd    = s * exp(clip(c0 + ws . h + bs, -6, 3))             #       mean and std (features)
    score = mean + sd * xi,   xi ~ N(0, 1)  per agent and arm;  pull the best score

With every correction at 0 it is Thompson sampling on the averaged Gaussian posterior
(``coop_ts``'s moment-matched form); ``b0`` and ``c0`` are learned offsets (optimism and
the draw's scale, as ``index_ts`` tunes ``bonus`` and ``draw_scale``) and the MLP learns
how both depend on the arm's statistics. As the posterior's ``s`` shrinks with the pulls,
so does every correction: a model trained at one horizon keeps the sampler's behaviour
at longer ones.

A trained net ships as the arrays of :data:`WEIGHTS` (an ``.npz``) that
:func:`posterior_scores` runs without torch or stable-baselines3, so a learned reference
policy (:mod:`baselines.learned`) is benched on any machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env.wrappers.team_posterior import POSTERIOR_FEATURES

FEATURE_SCALES = (1.0, 1.0, 10.0, 10.0, 0.2, 0.2, 1.0, 5.0, 0.2, 1.0)
"""What each of ``POSTERIOR_FEATURES`` is multiplied by before the network reads it:
values of order one for a tanh network."""

MEAN, STD = POSTERIOR_FEATURES.index("mean"), POSTERIOR_FEATURES.index("std")
"""The columns of the team posterior's mean and standard deviation."""

LOG_SPREAD = (-6.0, 3.0)
"""The range of the learned log-scale of the draw (a spread between 0.25% and 20 times
the posterior's standard deviation)."""

WEIGHTS = ("scales", "w1", "b1", "w2", "b2", "wm", "bm", "ws", "bs", "b0", "c0")
"""The arrays of a posterior net: feature scales, the two embedding layers (``x @ w +
b``), the mean and spread read-outs and the learned offsets ``b0`` and ``c0``."""


def posterior_scores(
    weights: Mapping[str, Any], features: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The score distribution of every arm in NumPy: ``features`` ``(..., M, F)``
    (unscaled) -> ``(mean, sd)``, each ``(..., M)`` float64 (module docstring).

    Examples:
        >>> w = {k: np.zeros((10, 3)) if k == "w1" else np.zeros((3, 3)) if k == "w2"
        ...      else np.zeros(3) if k in ("b1", "b2", "wm", "ws") else np.zeros(())
        ...      for k in WEIGHTS}
        >>> w["scales"] = np.ones(10)
        >>> x = np.zeros((2, 4, 10)); x[..., MEAN], x[..., STD] = 0.5, 0.1
        >>> mean, sd = posterior_scores(w, x)  # untrained: Thompson sampling's
        >>> mean[0].tolist(), sd[0].round(6).tolist()
        ([0.5, 0.5, 0.5, 0.5], [0.1, 0.1, 0.1, 0.1])
    """
    x = np.asarray(features, dtype=np.float32)
    h = np.tanh(_affine(x * np.asarray(weights["scales"], dtype=np.float32), weights["w1"],
                        weights["b1"]))  # fmt: skip
    h = np.tanh(_affine(h, weights["w2"], weights["b2"]))
    shift = _affine(h, np.asarray(weights["wm"]).reshape(-1, 1), weights["bm"])[..., 0]
    spread = _affine(h, np.asarray(weights["ws"]).reshape(-1, 1), weights["bs"])[..., 0]
    m, s = x[..., MEAN].astype(np.float64), x[..., STD].astype(np.float64)
    shift = shift.astype(np.float64) + float(weights["b0"])
    spread = np.clip(spread.astype(np.float64) + float(weights["c0"]), *LOG_SPREAD)
    return m + s * shift, s * np.exp(spread)


def _affine(x: np.ndarray, w: Any, b: Any) -> np.ndarray:
    """``x @ w + b`` in float32 (one BLAS call for all rows). BLAS may round two equal rows
    a last bit apart when they fall in differently blocked parts of a batch; the scores
    are then drawn with continuous noise, so no choice depends on it (a greedy choice
    between two arms of equal features may)."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.float32, copy=False)
    out = rows @ np.asarray(w, dtype=np.float32) + np.asarray(b, dtype=np.float32)
    return out.reshape(*x.shape[:-1], out.shape[-1])


def save_weights(path: str | Path, weights: Mapping[str, Any]) -> Path:
    """Write the arrays of :data:`WEIGHTS` to ``path`` (``.npz``).

    Examples:
        >>> import tempfile
        >>> w = {k: np.zeros(1) for k in WEIGHTS}
        >>> p = save_weights(Path(tempfile.mkdtemp()) / "net.npz", w)
        >>> sorted(load_weights(p)) == sorted(WEIGHTS)
        True
    """
    missing = [k for k in WEIGHTS if k not in weights]
    if missing:
        raise ValueError(f"weights lack {missing}")
    out = Path(path)
    arrays: dict[str, Any] = {k: np.asarray(weights[k]) for k in WEIGHTS}
    np.savez(out, **arrays)
    return out


def load_weights(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays :func:`save_weights` wrote.

    Raises:
        ValueError: If the file lacks one of :data:`WEIGHTS`.
    """
    with np.load(Path(path)) as data:
        weights = {k: np.asarray(data[k]) for k in data.files}
    missing = [k for k in WEIGHTS if k not in weights]
    if missing:
        raise ValueError(f"{path} is not a posterior net (no {missing})")
    return weights


def draw_scores(mean: np.ndarray, sd: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Each row's arm: the best of ``mean + sd * normals`` (``(..., M)`` each).

    Examples:
        >>> draw_scores(np.array([[0.5, 0.6]]), np.array([[0.1, 0.0]]),
        ...             np.array([[2.0, 0.0]])).tolist()
        [0]
    """
    return np.asarray(np.argmax(mean + sd * normals, axis=-1), dtype=np.int64)


__all__ = [
    "FEATURE_SCALES",
    "LOG_SPREAD",
    "MEAN",
    "STD",
    "WEIGHTS",
    "draw_scores",
    "load_weights",
    "posterior_scores",
    "save_weights",
]
