"""The text view of a bandit env's last step (``render_mode="ansi"`` or ``"human"``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def render_text(
    best_arm: int,
    t: int,
    horizon: int,
    agents: Sequence[str],
    arms: np.ndarray,
    rewards: np.ndarray,
    regret: np.ndarray,
) -> str:
    """One line for the step, one per agent: its last arm, reward and regret so far.

    Examples:
        >>> print(render_text(1, 3, 10, ["a"], np.array([0]), np.array([0.5]), np.array([0.2])))
        step 3/10  best arm 1
          a: arm 0 reward +0.500 regret 0.20
    """
    lines = [f"step {t}/{horizon}  best arm {best_arm}"]
    for i, a in enumerate(agents):
        lines.append(f"  {a}: arm {int(arms[i])} reward {rewards[i]:+.3f} regret {regret[i]:.2f}")
    return "\n".join(lines)


__all__ = ["render_text"]
