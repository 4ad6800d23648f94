"""The binary-tree mechanism of ``PrivateRewards`` for ``B`` envs at once, on any device.

:class:`~fedbandit_env.wrappers.PrivateRewards` runs one
:class:`~fedbandit_env.privacy.mechanisms.TreeMechanism` over the ``N M`` streams of its
env (Zhu et al., Algorithms 2-3). Its vector form
(:class:`~fedbandit_env.vector.wrappers.VecPrivateRewards`) has ``B`` such trees and
steps them here, written once against the array API (:mod:`fedbandit_env.backend`): the
same lines run on NumPy and on a torch device.

The noise is where the two differ. On NumPy every tree draws from its own generator in
``TreeMechanism``'s order (dyadic: one ``Lap(b)`` per stream seen in the closing block,
streams in index order; Honaker: stream by stream, level by level), so the two forms
release the same bits (``tests/vector/test_vector_replay.py``): :class:`TreeNoise` draws
each generator's next numbers in that order, compiled. On a torch
device the draws come from the device's generator (:class:`~fedbandit_env.backend.DeviceStream`):
the same mechanism and calibration, other numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedbandit_env.backend import Backend, DeviceStream
from fedbandit_env.privacy.batched_kernels import (
    close_blocks,
    honaker_close,
    laplace_marked,
    record_pulls,
)
from fedbandit_env.rng_kernels import generator_table


def lowest_bit(t: int) -> int:
    """Level of the block ``(q(t), t]`` that completes at step ``t`` (Algorithm 2, line 2).

    Examples:
        >>> [lowest_bit(t) for t in (1, 2, 3, 4, 12)]
        [0, 1, 0, 2, 2]
    """
    return (t & -t).bit_length() - 1


class TreeNoise:
    """The Laplace draws of ``B`` trees: :meth:`draws` gives every cell of a ``(B, K)``
    mask its noise, the marked cells of row ``b`` the next draws of tree ``b`` in
    row-major order (0 elsewhere).

    On NumPy each tree draws from its own generator in that order, one
    ``rng.laplace(0, scale)`` a marked cell, compiled
    (:func:`~fedbandit_env.privacy.batched_kernels.laplace_marked`: numba's Laplace on
    the generator's own bit generator, NumPy's numbers; an earlier form refilled a buffer
    per generator from Python, most of the wrapper's time at ``B = 1024``); on a torch
    device each call draws afresh from the device stream.

    Args:
        backend: Where the arrays live.
        scale: The Laplace scale ``b``.

    Examples:
        >>> from fedbandit_env.backend import backend
        >>> noise = TreeNoise(backend(None), 2.0)
        >>> noise.restart([np.random.default_rng(0)])
        >>> got = noise.draws(np.array([[True, False, True]]))
        >>> expect = np.random.default_rng(0).laplace(0.0, 2.0, 2)
        >>> got[0].tolist() == [expect[0], 0.0, expect[1]]
        True
    """

    def __init__(self, backend: Backend, scale: float) -> None:
        self.backend, self.scale = backend, float(scale)
        self.rngs: list[np.random.Generator] = []
        self.stream: DeviceStream | None = None
        self._table = generator_table([])

    def restart(
        self, rngs: list[np.random.Generator] | None = None, stream: DeviceStream | None = None
    ) -> None:
        """Draw from these generators (NumPy; ``None`` keeps the ones in use, where they
        are) or from ``stream`` (a torch device)."""
        self.stream = stream
        if rngs is not None:
            self.rngs = list(rngs)  # alive while the table holds their addresses
            self._table = generator_table(self.rngs)

    @property
    def table(self) -> np.ndarray:
        """The generators as a :func:`~fedbandit_env.rng_kernels.generator_table` (NumPy),
        for a kernel that draws their next numbers itself."""
        return self._table

    def draws(self, marked: Any) -> Any:
        """``(B, K)`` float64 noise: the next draws of each tree at its marked cells."""
        xp = self.backend.xp
        if self.stream is not None:
            fresh = self.stream.laplace(self.scale, tuple(marked.shape))
            return xp.where(marked, fresh, xp.zeros_like(fresh))
        marked = np.ascontiguousarray(marked, dtype=np.bool_)
        if marked.shape[0] != len(self.rngs):
            raise ValueError(f"{marked.shape[0]} trees' cells marked, {len(self.rngs)} generators")
        return laplace_marked(self._table, marked, self.scale, np.empty(marked.shape),
                              np.empty(marked.shape[1]))  # fmt: skip


class BatchedTree:
    """``B`` binary trees over the ``N M`` (agent, arm) reward streams of ``B`` envs
    (module docstring), stepped as arrays.

    State (a step touches whole rows): ``acc``, ``node``, ``var`` ``(B, L, N M)`` the open
    blocks' exact sums, the released estimates of the last completed blocks and their
    noise variance (Honaker); ``last`` ``(B, N M)`` the step each stream was last pulled
    (0: never), which says whether a closing block holds an observation
    (``TreeMechanism``'s ``seen``: the block ``(t - 2^l, t]`` does iff ``last > t - 2^l``);
    ``counts`` ``(B, N, M)``; ``prefix`` ``(B, N M)`` the private sums at ``t``.

    Args:
        backend: Where the arrays live.
        shape: ``(B, N, M)``.
        levels: ``L``, the tree's depth (``tree_levels(T)``).
        clip: ``(low, high)`` every reward is clipped to.
        scale: The Laplace scale.
        honaker: Honaker's estimator instead of the dyadic one.

    Examples:
        >>> from fedbandit_env.backend import backend
        >>> tree = BatchedTree(backend(None), (1, 1, 2), 2, (0.0, 1.0), 1e-12, False)
        >>> tree.restart([np.random.default_rng(0)])
        >>> inc = tree.step(np.array([[1]]), np.array([[0.5]]), 1)
        >>> round(float(inc[0, 0]), 6), tree.counts[0, 0].tolist()
        (0.5, [0.0, 1.0])
    """

    def __init__(
        self,
        backend: Backend,
        shape: tuple[int, int, int],
        levels: int,
        clip: tuple[float, float],
        scale: float,
        honaker: bool,
    ) -> None:
        self.backend = be = backend
        self.shape, self.levels = shape, int(levels)
        self.clip, self.scale, self.honaker = clip, float(scale), bool(honaker)
        b, n, m = shape
        self.noise = TreeNoise(be, scale)
        self._envs = be.arange(b)[:, None]
        self._agents = be.arange(n)[None, :]
        self._first = be.arange(n)[None, :] * m  # stream of (i, arm): i M + arm
        self._levels = be.arange(self.levels)[None, :, None]
        self._clear()

    def _clear(self) -> None:
        be, (b, n, m), levels = self.backend, self.shape, self.levels
        self.acc = be.zeros((b, levels, n * m))
        self.node = be.zeros((b, levels, n * m))
        self.var = be.zeros((b, levels, n * m))
        self.last = be.zeros((b, n * m), be.int64)
        self.counts = be.zeros((b, n, m))
        self.prefix = be.zeros((b, n * m))
        self.means32 = be.zeros((b, n, m), be.float32)
        self.t = 0

    def restart(
        self, rngs: list[np.random.Generator] | None = None, stream: DeviceStream | None = None
    ) -> None:
        """A new episode: empty trees; the noise from ``rngs`` or ``stream``
        (:meth:`TreeNoise.restart`)."""
        self._clear()
        self.noise.restart(rngs, stream)

    def step(self, arms: Any, rewards: Any, t: int) -> Any:
        """Agent ``i`` of env ``b`` pulled ``arms[b, i]`` and got ``rewards[b, i]`` at step
        ``t``: clip it into stream ``i M + arm``, close and noise the blocks ending at
        ``t`` (Algorithm 3) and sum the dyadic cover of ``t`` (Algorithm 2). Returns
        each agent's increment of its pulled stream's private sum, ``(B, N)``.

        On NumPy the same arithmetic runs compiled (:mod:`~fedbandit_env.privacy.batched_kernels`,
        held to the bit to the array statement below, which a torch device runs)."""
        be, xp = self.backend, self.backend.xp
        lo, hi = self.clip
        value = xp.clip(xp.astype(rewards, be.float64), lo, hi)
        if be.is_numpy:
            return self._compiled_step(np.asarray(arms, dtype=np.int64), value, t)
        return self._array_step(arms, value, t)

    def _array_step(self, arms: Any, value: Any, t: int) -> Any:
        """:meth:`step` after the clip, as array operations (any device)."""
        be, xp = self.backend, self.backend.xp
        streams = self._first + arms
        be.add_at(self.counts, (self._envs, self._agents, arms), 1.0)
        self.last[self._envs, streams] = t
        be.add_at(self.acc, (self._envs[:, :, None], self._levels, streams[:, None, :]),
                  value[:, None, :])  # fmt: skip
        top = lowest_bit(t)
        if not self.honaker:
            seen = self.last > t - (1 << top)
            self.node[:, top, :] = self.acc[:, top, :] + self.noise.draws(seen)
        else:
            self._honaker(t, top)
        self.acc[:, : top + 1, :] = 0.0
        before = self.prefix[self._envs, streams]
        prefix = xp.zeros_like(self.prefix)
        for level in range(self.levels):  # the cover of t, levels increasing
            if (t >> level) & 1:
                prefix = prefix + self.node[:, level, :]
        self.prefix = prefix
        pulled = self.counts > 0
        flat = xp.reshape(prefix, self.shape)
        means = flat / xp.where(pulled, self.counts, xp.ones_like(self.counts))
        self.means32 = xp.astype(xp.where(pulled, means, xp.zeros_like(means)), be.float32)
        self.t = t
        return prefix[self._envs, streams] + (-before)

    def _compiled_step(self, arms: np.ndarray, value: np.ndarray, t: int) -> np.ndarray:
        """:meth:`step` on NumPy: the same updates in :mod:`batched_kernels`' order."""
        if len(self.noise.rngs) != self.shape[0]:  # the kernels index the table by tree
            raise ValueError(
                f"{self.shape[0]} trees, {len(self.noise.rngs)} generators: restart() "
                "with one generator a tree"
            )
        record_pulls(self.counts, self.last, self.acc, arms, value, t)
        top = lowest_bit(t)
        if self.honaker:
            honaker_close(self.acc, self.node, self.var, self.last, t, top, self.noise.table,
                          self.noise.scale, 2.0 * self.scale * self.scale)  # fmt: skip
            noise = self.prefix  # unread
        else:
            noise = self.noise.draws(self.last > t - (1 << top))
        b, n, m = self.shape
        prefix, increments = np.empty((b, n * m)), np.empty((b, n))
        self.means32 = np.empty((b, n, m), np.float32)
        close_blocks(self.acc, self.node, self.prefix, self.counts, arms, noise, t, top,
                     not self.honaker, prefix, increments, self.means32)  # fmt: skip
        self.prefix, self.t = prefix, t
        return increments

    def _honaker(self, t: int, top: int) -> None:
        """Honaker's bottom-up pass over levels ``0 .. top`` (``tree_complete``'s), as
        array operations (a torch device; NumPy runs the same arithmetic compiled,
        :func:`~fedbandit_env.privacy.batched_kernels.honaker_close`)."""
        be, xp = self.backend, self.backend.xp
        seen = xp.stack([self.last > t - (1 << lvl) for lvl in range(top + 1)], axis=-1)
        b, s = int(seen.shape[0]), int(seen.shape[1])
        noise = xp.reshape(self.noise.draws(xp.reshape(seen, (b, -1))), (b, s, top + 1))
        var_unit = 2.0 * self.scale * self.scale
        zero = be.zeros((b, s))
        left, left_var = zero, zero
        for lvl in range(top + 1):
            own = self.acc[:, lvl, :] + noise[..., lvl]
            own_var = xp.where(seen[..., lvl], xp.full_like(zero, var_unit), zero)
            old, old_var = be.copy(self.node[:, lvl, :]), be.copy(self.var[:, lvl, :])
            if lvl == 0:
                est, v = own, own_var
            else:
                kids = left + self.node[:, lvl - 1, :]
                kids_var = left_var + self.var[:, lvl - 1, :]
                total = own_var + kids_var
                some = total > 0.0
                safe = xp.where(some, total, xp.ones_like(total))
                w = kids_var / safe
                est = xp.where(some, w * own + (1.0 - w) * kids, own)
                v = xp.where(some, own_var * kids_var / safe, zero)
            self.node[:, lvl, :] = est
            self.var[:, lvl, :] = v
            left, left_var = old, old_var

    def epsilon_spent(self, sensitivity: float) -> float:
        """Privacy spent so far by each stream (as ``TreeMechanism.epsilon_spent``)."""
        touched = min(self.levels, self.t.bit_length())
        return touched * sensitivity / self.scale


__all__ = ["BatchedTree", "TreeNoise", "lowest_bit"]
