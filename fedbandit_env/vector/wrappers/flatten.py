"""Flattening in vector form: every agent's observation of a vector step as one row of
the flat layout the PettingZoo path uses (:class:`~fedbandit_env.wrappers.flatten.FlatLayout`)."""

from __future__ import annotations

import numpy as np

from fedbandit_env.backend import array_backend
from fedbandit_env.core.routing import inbox
from fedbandit_env.wrappers.flatten import FlatLayout


def flat_rows(
    obs: dict[str, np.ndarray], layout: FlatLayout, public_dim: int, out: np.ndarray
) -> np.ndarray:
    """Every agent's observation of a vector step, flattened as ``layout`` flattens the
    PettingZoo observations: ``out`` ``(B N, width)`` float32, row ``b N + i`` agent
    ``i`` of env ``b``, messages as that receiver's inbox
    (:func:`~fedbandit_env.core.routing.inbox`). The same numbers as
    ``layout.batch`` of the agents' PettingZoo observations, value for value.

    Examples:
        >>> from gymnasium import spaces
        >>> layout = FlatLayout.of(spaces.Dict({"arm": spaces.Discrete(2),
        ...                                     "reward": spaces.Box(0, 1, (1,))}))
        >>> obs = {"arm": np.array([[1, 0]]), "reward": np.array([[[0.5], [1.0]]])}
        >>> flat_rows(obs, layout, 0, np.zeros((2, 3), np.float32)).tolist()
        [[0.0, 1.0, 0.5], [1.0, 0.0, 1.0]]
    """
    be = array_backend(out)
    xp = be.xp
    rows = int(out.shape[0])
    every = be.arange(rows)
    for key, start, size, kind in layout.entries:
        if isinstance(kind, int):  # Discrete: one-hot
            out[:, start : start + size] = 0.0
            index = xp.reshape(be.asarray(obs[key]), (rows,))
            out[every, start + index - kind] = 1.0
            continue
        if key == "messages":
            value = inbox(obs["messages"], obs["mask"], obs.get("public_mask"), public_dim)
        else:
            value = be.asarray(obs[key])
        out[:, start : start + size] = xp.reshape(xp.astype(value, be.dtype(kind)), (rows, size))
    return out


__all__ = ["flat_rows"]
