"""``MessageLoss`` in vector form: each delivered peer message is lost with probability
``p``, every env drawing from its own wrapper stream in the PettingZoo wrapper's order."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from numba import njit

from fedbandit_env.rng_kernels import generator_at, next_double_at
from fedbandit_env.vector.wrappers.base import VecWrapper, heard_rows
from fedbandit_env.vector.wrappers.kernels import row_sums
from fedbandit_env.wrappers.base import check_probability


@njit(cache=True, nogil=True)
def lose_messages(
    given: np.ndarray,
    given_public: np.ndarray,
    p: float,
    table: Any,
    mask: np.ndarray,
    public: np.ndarray,
) -> tuple[np.ndarray, bool]:  # pragma: no cover
    """For every env ``b``, receivers in order and, within a receiver, senders in order:
    one uniform (``rng_b.random()``, bit for bit) per sender whose message reached it
    (``given`` or ``given_public`` set); below ``p`` the message is lost. ``mask`` and
    ``public`` ``(B, N, N)`` int8 get the routed masks with the losses cleared
    (``given`` / ``given_public``: ``(B, N, N)``, or ``(1, N, N)`` for one every env
    shares; ``given_public`` of shape ``(0, 0, 0)``: none, ``public`` then zeros).
    Returns each receiver's losses ``(B, N)``, the draws
    :class:`~fedbandit_env.wrappers.MessageLoss` makes for that env from the same
    stream, and whether every sender of every env is still heard whole by someone (then
    no sender's row of ``messages`` is to be cleared).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rng = np.random.default_rng(0)  # kept alive: the table holds its address
        >>> given = np.ones((1, 2, 2), np.int8)
        >>> mask, public = np.empty((1, 2, 2), np.int8), np.empty((1, 2, 2), np.int8)
        >>> lost, intact = lose_messages(given, np.zeros((0, 0, 0), np.int8), 1.0,
        ...                              generator_table([rng]), mask, public)
        >>> lost.tolist(), intact, int(mask.sum())
        ([[2, 2]], False, 0)
    """
    n_envs, n = mask.shape[0], mask.shape[1]
    shared, has_public = given.shape[0] == 1, given_public.shape[0] > 0
    shared_public = has_public and given_public.shape[0] == 1
    lost = np.zeros((n_envs, n), dtype=np.int64)
    heard = np.empty(n, dtype=np.bool_)
    intact = True
    for b in range(n_envs):
        g = 0 if shared else b
        gp = 0 if shared_public else b
        rng = generator_at(table, b)
        for s in range(n):
            heard[s] = False
        for r in range(n):
            count = np.int64(0)
            for s in range(n):
                m0 = given[g, r, s]
                p0 = given_public[gp, r, s] if has_public else np.int8(0)
                keep = np.int8(1)
                if m0 != 0 or p0 != 0:
                    gone = next_double_at(rng) < p  # cleared by a mask (p = 0.1: 1 in 10)
                    keep = np.int8(0) if gone else np.int8(1)
                    count += gone
                kept = m0 & keep
                mask[b, r, s] = kept
                public[b, r, s] = p0 & keep
                heard[s] |= kept != 0
            lost[b, r] = count
        for s in range(n):
            intact &= heard[s]
    return lost, intact


class VecMessageLoss(VecWrapper):
    """:class:`~fedbandit_env.wrappers.MessageLoss` for ``B`` envs: after the protocol
    routed a step, each delivered peer message (and the public prefix it carries) is lost
    with probability ``p`` (its link's cost still counted); env ``b`` draws from this
    layer's stream of its seed, in the PettingZoo wrapper's order, so the losses are the
    same. A sender nobody hears any more has its row of ``messages`` zeroed (the
    sender-indexed form shows only what someone got). ``infos`` gains
    ``messages_lost`` ``(B, N)`` (per receiver) and ``messages_lost_total`` ``(B,)``.

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> venv = VecMessageLoss(FederatedMABVecEnv(conflicting(3, 3, seed=0), horizon=3,
        ...                       message_dim=2, num_envs=2), p=1.0)
        >>> _ = venv.reset(seed=0)
        >>> obs, _, _, _, infos = venv.step(np.zeros((2, 3), int), np.ones((2, 3, 2)))
        >>> int(obs["mask"].sum()), infos["messages_lost"][0].tolist(), float(obs["messages"].max())
        (0, [2, 2, 2], 0.0)
    """

    def __init__(self, env: VectorEnv, p: float) -> None:
        super().__init__(env)
        self.p = check_probability("p", p)
        if not self.message_dim:
            raise ValueError("VecMessageLoss needs an env that carries messages")
        self.restart_streams(None)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        """Reset the envs; with a seed, restart each env's loss stream."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self.restart_streams(seed)
        return obs, self._with_losses(infos, np.zeros((self.num_envs, self.n_agents), int))

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step, then lose each delivered peer message with probability ``p``."""
        resets = self.needs_reset
        obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
        if resets:
            return (
                obs,
                rewards,
                terms,
                truncs,
                self._with_losses(infos, np.zeros((self.num_envs, self.n_agents), int)),
            )
        given = np.asarray(obs["mask"])
        if given.strides[0] == 0:  # one mask for every env (a broadcast graph): once
            given = given[:1]
        has_public = "public_mask" in obs
        given_public = np.asarray(obs["public_mask"]) if has_public else np.zeros((0, 0, 0))
        if has_public and given_public.strides[0] == 0:
            given_public = given_public[:1]
        shape = (self.num_envs, self.n_agents, self.n_agents)
        mask, public = np.empty(shape, np.int8), np.empty(shape, np.int8)
        lost, intact = lose_messages(np.ascontiguousarray(given, dtype=np.int8),
                                     np.ascontiguousarray(given_public, dtype=np.int8),
                                     self.p, self._table, mask, public)  # fmt: skip
        out = {**obs, "mask": mask}
        if has_public:
            out["public_mask"] = public
        public_dim = int(self.protocol.public_dim)
        if intact and not (public_dim and has_public):  # every row still heard whole:
            out["messages"] = np.asarray(obs["messages"], dtype=np.float32)  # as it came
        else:
            out["messages"] = heard_rows(out, public_dim)
        return out, rewards, terms, truncs, self._with_losses(infos, lost)

    def _with_losses(self, infos: dict[str, Any], lost: np.ndarray) -> dict[str, Any]:
        return {**infos, "messages_lost": lost, "messages_lost_total": row_sums(lost)}


__all__ = ["VecMessageLoss", "lose_messages"]
