"""The checks of a step's actions, shared by both cores (:class:`ActionChecks`): the
arms as ``(B, N)`` integers in range and the messages as finite numbers within the
bounds, or an error that names the entry."""

from __future__ import annotations

from typing import Any

import numpy as np

from fedbandit_env.backend import Backend
from fedbandit_env.core.kernels import arms_within, messages_within
from fedbandit_env.type_aliases import FloatArray, IntArray


class ActionChecks:
    """What a core checks of the actions its views hand it: a base of
    :class:`~fedbandit_env.core.mab.MABCore` and
    :class:`~fedbandit_env.core.linear.LinearCore`, which set the attributes below
    (``n_arms``: the choices an agent has, the arms or a decision set's size).

    Examples:
        >>> from fedbandit_env.core.mab import MABCore
        >>> issubclass(MABCore, ActionChecks)
        True
    """

    backend: Backend
    xp: Any
    n_envs: int
    n_agents: int
    n_arms: int
    message_dim: int
    message_bounds: tuple[float, float]
    _checked: Any  # the rows check_actions checks (None: every row)
    _senders: IntArray  # the same, on the host

    def admit_forgers(self, agents: Any) -> None:
        """Carry agents ``agents``' (indices) messages as the wire would, whatever their
        values (float32 NaN, infinities, overflow): a Byzantine layer's liars, whom no
        check at the sender stops; every other agent's malformed message still raises.

        Examples:
            >>> from fedbandit_env.core.mab import MABCore
            >>> from fedbandit_env.problems import MABProblem
            >>> from fedbandit_env.network import Network
            >>> from fedbandit_env.protocols import Broadcast
            >>> core = MABCore(MABProblem([[0.2, 0.8], [0.6, 0.3]]), Network.complete(2),
            ...                [Broadcast()], horizon=3, message_dim=1)
            >>> core.admit_forgers([1]); core.reset([7])
            >>> core.check_actions(np.zeros((1, 2), int), np.array([[[0.5], [np.nan]]]))[1]
            array([[[0.5],
                    [nan]]])
        """
        forged = np.zeros(self.n_agents, dtype=bool)
        if self._checked is not None:
            forged[:] = True
            forged[self.backend.to_numpy(self._checked)] = False
        forged[np.asarray(agents, dtype=np.int64)] = True
        self._checked = self.backend.asarray(np.flatnonzero(~forged))
        self._senders = np.flatnonzero(~forged).astype(np.int64)

    def check_actions(
        self, arms: Any, messages: Any, values: bool = True
    ) -> tuple[IntArray, FloatArray | None]:
        """``arms`` as ``(B, N)`` int64 in ``[0, M)`` and ``messages`` as ``(B, N, D)``
        finite float64 within the bounds, on the core's device, or a
        ``TypeError``/``ValueError`` that says which entry is wrong.

        ``values=False`` checks types and shapes only: on a torch device a check of the
        values reads them back to the host, a round-trip per step (the vector env's
        ``validate``).
        """
        b, n, m = self.n_envs, self.n_agents, self.n_arms
        be = self.backend
        if be.is_numpy and isinstance(arms, np.ndarray):
            fast = self._check_numpy(arms, messages, values)
            if fast is not None:
                return fast
        a = arms if be.owns(arms) else be.asarray(be.to_numpy(arms))
        if not be.is_numpy and a.dtype not in (be.int64, be._torch.int32, be._torch.int16,
                                               be._torch.uint8, be._torch.int8):  # fmt: skip
            raise TypeError(f"arms must be integers of shape ({b}, {n}), got dtype {a.dtype}")
        if be.is_numpy and a.dtype.kind not in "iu":
            raise TypeError(f"arms must be integers of shape ({b}, {n}), got dtype {a.dtype}")
        if tuple(a.shape) != (b, n):
            raise ValueError(
                f"arms must have shape ({b}, {n}) (envs, agents), got {tuple(a.shape)}"
            )
        if values and b * n and (bool(a.min() < 0) or bool(a.max() >= m)):
            bad = be.to_numpy((a < 0) | (a >= m))
            cell = tuple(int(x) for x in np.argwhere(bad)[0])
            raise ValueError(f"arms must lie in [0, {m}); arms[{cell}] = {int(a[cell])}")
        a = self.xp.astype(a, be.int64, copy=False)
        if not self.message_dim:
            if messages is not None and int(np.prod(np.shape(messages))):
                raise ValueError("this env carries no messages (message_dim=0)")
            return a, None
        d = self.message_dim
        if messages is None:
            raise ValueError(f"messages of shape ({b}, {n}, {d}) are required (message_dim={d})")
        if be.owns(messages):
            msg = self.xp.astype(messages, be.float64, copy=False)
        else:
            msg = be.asarray(np.asarray(be.to_numpy(messages), dtype=np.float64))
        if tuple(msg.shape) != (b, n, d):
            raise ValueError(f"messages must have shape ({b}, {n}, {d}), got {tuple(msg.shape)}")
        if not values:
            return a, msg
        lo, hi = self.message_bounds
        honest = msg if self._checked is None else msg[:, self._checked]
        if not int(np.prod(honest.shape)):
            return a, msg
        low, high = float(honest.min()), float(honest.max())
        if not (lo <= low and high <= hi and -np.inf < low and high < np.inf):
            host = be.to_numpy(msg)
            bad = ~(np.isfinite(host) & (host >= lo) & (host <= hi))
            if self._checked is not None:
                bad[:, np.setdiff1d(np.arange(n), be.to_numpy(self._checked))] = False
            where = tuple(int(x) for x in np.argwhere(bad)[0])
            raise ValueError(
                f"messages must be finite and within [{lo}, {hi}]; "
                f"messages[{where}] = {float(host[where])!r}"
            )
        return a, msg

    def _check_numpy(
        self, arms: np.ndarray, messages: Any, values: bool
    ) -> tuple[IntArray, FloatArray | None] | None:
        """:meth:`check_actions` of NumPy arrays that pass (each checked in one compiled
        pass, no temporaries); ``None`` where anything is off, for the general path to
        say what."""
        b, n, d = self.n_envs, self.n_agents, self.message_dim
        if arms.dtype.kind not in "iu" or arms.shape != (b, n):
            return None
        if values and not arms_within(arms, self.n_arms):
            return None
        if not d:
            return None if messages is not None else (arms.astype(np.int64, copy=False), None)
        if not isinstance(messages, np.ndarray) or messages.shape != (b, n, d):
            return None
        if messages.dtype.kind not in "fiu":
            return None
        msg = messages.astype(np.float64, copy=False)
        if values:
            lo, hi = self.message_bounds
            if not messages_within(msg, self._senders, float(lo), float(hi)):
                return None
        return arms.astype(np.int64, copy=False), msg


__all__ = ["ActionChecks"]
