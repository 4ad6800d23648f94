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
    reached: np.ndarray, p: float, table: Any, mask: np.ndarray, public: np.ndarray
) -> np.ndarray:  # pragma: no cover
    """For every env ``b``, receivers in order and, within a receiver, senders in order:
    one uniform (``rng_b.random()``, bit for bit) per sender whose message reached it;
    below ``p`` the message is lost (``mask`` and ``public`` cleared, in place). Returns
    each receiver's losses ``(B, N)``, the draws :class:`~fedbandit_env.wrappers.MessageLoss`
    makes for that env from the same stream.

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rng = np.random.default_rng(0)  # kept alive: the table holds its address
        >>> reached = np.ones((1, 2, 2), np.bool_)
        >>> mask, public = np.ones((1, 2, 2), np.int8), np.zeros((1, 2, 2), np.int8)
        >>> lose_messages(reached, 1.0, generator_table([rng]), mask, public).tolist()
        [[2, 2]]
    """
    n_envs, n = reached.shape[0], reached.shape[1]
    lost = np.zeros((n_envs, n), dtype=np.int64)
    for b in range(n_envs):
        rng = generator_at(table, b)
        for r in range(n):
            count = np.int64(0)
            for s in range(n):
                if reached[b, r, s]:
                    u = next_double_at(rng)
                    gone = u < p  # cleared by a mask, not a branch (p = 0.1: 1 in 10)
                    keep = np.int8(0) if gone else np.int8(1)
                    mask[b, r, s] &= keep
                    public[b, r, s] &= keep
                    count += gone
            lost[b, r] = count
    return lost


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
        # own C-ordered copies: the router's may be shared, or a broadcast graph (whose
        # default copy is ordered for its zero stride: a kernel would write it across)
        mask = np.array(obs["mask"], dtype=np.int8, order="C")
        has_public = "public_mask" in obs
        public = (
            np.array(obs["public_mask"], dtype=np.int8, order="C")
            if has_public
            else np.zeros(mask.shape, np.int8)
        )
        reached = (mask | public) != 0
        lost = lose_messages(reached, self.p, self._table, mask, public)
        out = {**obs, "mask": mask}
        if has_public:
            out["public_mask"] = public
        out["messages"] = heard_rows(out, int(self.protocol.public_dim))
        return out, rewards, terms, truncs, self._with_losses(infos, lost)

    def _with_losses(self, infos: dict[str, Any], lost: np.ndarray) -> dict[str, Any]:
        return {**infos, "messages_lost": lost, "messages_lost_total": row_sums(lost)}


__all__ = ["VecMessageLoss", "lose_messages"]
