"""Regret plots as the papers draw them: mean over trials with a min-max band."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fedbandit_env.runner.rollout import RegretCurves


def plot_regret(
    curves: Sequence[RegretCurves],
    path: str | Path,
    title: str = "",
    log_x: bool = False,
) -> Path:
    """Save a two-panel PNG: per-agent (mean over agents) and group regret vs. step.

    Each policy is a line (mean over trials) with a shaded band from the smallest to the
    largest trial, the convention of Zhu et al.'s Fig. 2.

    Example:
        >>> import tempfile, os, numpy as np
        >>> c = RegretCurves("p", np.array([1, 2]), np.ones((2, 3, 2)))
        >>> plot_regret([c], os.path.join(tempfile.mkdtemp(), "r.png")).suffix
        '.png'
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError("plotting needs matplotlib: pip install 'fedbandit_env[plots]'") from err
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for c in curves:
        for ax, data in zip(axes, (c.per_agent, c.group), strict=True):
            (line,) = ax.plot(c.t, data.mean(axis=0), label=c.policy, lw=1.8)
            ax.fill_between(
                c.t, data.min(axis=0), data.max(axis=0), color=line.get_color(), alpha=0.2, lw=0
            )
    for ax, ylabel in zip(
        axes, ("per-agent regret (mean over agents)", "group regret"), strict=True
    ):
        ax.set_xlabel("step t")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if log_x:
            ax.set_xscale("log")
    axes[0].legend(loc="upper left")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
