"""The views of a bandit env's last step: text (``render_mode="ansi"`` or ``"human"``)
and a picture (``"rgb_array"``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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


def render_network(
    network: Any,
    arms: np.ndarray,
    heard: np.ndarray | None,
    t: int,
    horizon: int,
    best_arm: int | np.ndarray,
    size: tuple[int, int] = (480, 480),
) -> np.ndarray:
    """The picture of one step (``render_mode="rgb_array"``): the communication graph,
    each agent a disc coloured by the arm it pulled (the global best arm ringed in
    black), the links grey, and an arrow for every message that arrived this step, from
    sender to receiver (``heard[r, s]``). No reward or regret is drawn.

    Args:
        network: A :class:`~fedbandit_env.network.Network`.
        arms: ``(N,)`` the arms pulled this step.
        heard: ``(N, N)`` bool, ``heard[r, s]``: ``r`` got a message from ``s`` (``None``:
            an env without messages).
        t: The step.
        horizon: The horizon.
        best_arm: The global best arm; or ``(N,)`` bool, which agents chose the best
            action they had (a linear env: each agent's decision set has its own best).
        size: ``(width, height)`` in pixels.

    Returns:
        ``(height, width, 3)`` uint8 RGB.

    Raises:
        MissingExtra: Without matplotlib (``pip install 'fedbandit_env[plots]'``).

    Examples:
        >>> from fedbandit_env.network import Network
        >>> heard = np.eye(4, dtype=bool)[::-1]  # agent 3 heard agent 0, 2 heard 1, ...
        >>> img = render_network(Network.ring(4), np.array([0, 1, 1, 0]), heard, 3, 10, 1,
        ...                      size=(160, 120))
        >>> img.shape, img.dtype.name
        ((120, 160, 3), 'uint8')
    """
    from fedbandit_env.extras import require

    matplotlib = require("matplotlib", "plots", "rgb_array rendering")
    matplotlib.use("Agg")
    figure = require("matplotlib.figure", "plots", "rgb_array rendering")
    backend = require("matplotlib.backends.backend_agg", "plots", "rgb_array rendering")
    n = len(arms)
    angle = 2 * np.pi * np.arange(n) / max(n, 1) + np.pi / 2
    xy = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    dpi = 100
    fig = figure.Figure(figsize=(size[0] / dpi, size[1] / dpi), dpi=dpi)
    canvas = backend.FigureCanvasAgg(fig)
    ax = fig.add_axes((0.02, 0.02, 0.96, 0.86))
    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-1.3, 1.3)
    ax.set_aspect("equal")
    ax.axis("off")
    for u, v in np.asarray(network.edges).reshape(-1, 2):
        ax.plot(*xy[[u, v]].T, color="0.8", lw=1, zorder=1)
    if heard is not None:
        for r, s in zip(*np.nonzero(heard), strict=True):
            if r != s:
                arrow = {"arrowstyle": "->", "color": "0.25", "lw": 0.8}
                ax.annotate("", xy=xy[r] * 0.92, xytext=xy[s] * 0.92, arrowprops=arrow, zorder=2)
    palette = matplotlib.colormaps["tab10"]
    colours = [palette(int(a) % 10) for a in arms]
    if isinstance(best_arm, np.ndarray):
        best = np.asarray(best_arm, dtype=bool).reshape(n)
        title = "colour: choice in its set   ringed: its set's best"
    else:
        best = np.asarray(arms).astype(int) == int(best_arm)
        title = f"colour: arm   ringed: best arm {best_arm}"
    edges = ["black" if b else "white" for b in best]
    ax.scatter(xy[:, 0], xy[:, 1], s=max(30, 2400 / max(n, 1)), c=colours, edgecolors=edges,
               linewidths=2, zorder=3)  # fmt: skip
    if n <= 30:
        for i in range(n):
            ax.text(*(xy[i] * 1.17), str(i), ha="center", va="center", fontsize=7)
    fig.suptitle(f"step {t}/{horizon}   {title}", fontsize=9)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


__all__ = ["render_network", "render_text"]
