"""``AgentCrash`` in vector form: agents of every env drop off the network and may come
back, each env's chains drawn from its own stream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from numba import njit

from fedbandit_env.rng_kernels import generator_at, next_double_at
from fedbandit_env.vector.wrappers.base import VecWrapper, heard_rows
from fedbandit_env.vector.wrappers.kernels import cut_off, row_sums
from fedbandit_env.wrappers.base import agent_name, check_probability
from fedbandit_env.wrappers.link_failures import ONE_HOP


@njit(cache=True, nogil=True)
def move_chains(
    table: Any, may: np.ndarray, crash: float, recover: float, down: np.ndarray
) -> None:  # pragma: no cover
    """One step of every env's crash chains, in place: for env ``b``, one uniform
    (``rng_b.random()``, bit for bit) per agent in ``may``, in order; an up agent crashes
    below ``crash``, a crashed one stays down at or above ``recover`` (the draws
    :class:`~fedbandit_env.wrappers.AgentCrash` makes from the same stream).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rng = np.random.default_rng(0)  # kept alive: the table holds its address
        >>> down = np.zeros((1, 2), np.bool_)
        >>> move_chains(generator_table([rng]), np.array([1]), 1.0, 0.0, down)
        >>> down.tolist()
        [[False, True]]
    """
    for b in range(down.shape[0]):
        rng = generator_at(table, b)
        for k in range(may.size):
            i = may[k]
            u = next_double_at(rng)
            was = down[b, i]
            down[b, i] = (was & (u >= recover)) | (~was & (u < crash))  # no branch


class VecAgentCrash(VecWrapper):
    """:class:`~fedbandit_env.wrappers.AgentCrash` for ``B`` envs, with the same reading
    of a crash: after each step every agent that may crash moves on its two-state chain
    (one uniform per such agent, from its env's stream at this layer's depth, in the
    PettingZoo wrapper's order); a crashed agent's messages reach no one (its row of
    ``messages`` zeroed, its ``mask`` and ``public_mask`` columns cleared) and it hears
    nothing (its rows cleared, ``server``/``server_mask`` zeroed), while it keeps pulling.
    ``infos`` gains ``crashed`` and ``recovered`` ``(B, N)`` and ``agents_down`` ``(B,)``.
    One-hop protocols only, as in the PettingZoo wrapper.

    Args:
        env: A vector env (or layer) with one-hop message delivery.
        crash: Probability that an up agent crashes at a step.
        recover: Probability that a crashed agent comes back at a step (0: crash-stop).
        agents: The agents that may crash (names or indices); default all.

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> base = FederatedMABVecEnv(conflicting(4, 3, seed=0), horizon=3, message_dim=1,
        ...                           num_envs=2)
        >>> venv = VecAgentCrash(base, crash=1.0, agents=["agent_0"])
        >>> _ = venv.reset(seed=0)
        >>> obs, _, _, _, infos = venv.step(np.zeros((2, 4), int), np.ones((2, 4, 1)))
        >>> obs["mask"][0, 1].tolist(), infos["crashed"][0].tolist()
        ([0, 0, 1, 1], [True, False, False, False])
    """

    def __init__(
        self,
        env: VectorEnv,
        crash: float,
        recover: float = 0.0,
        agents: Sequence[str | int] | None = None,
    ) -> None:
        super().__init__(env)
        self.crash = check_probability("crash", crash)
        self.recover = check_probability("recover", recover)
        if not self.message_dim:
            raise ValueError("VecAgentCrash needs an env that carries messages")
        name = getattr(self.protocol, "name", "")
        if name not in ONE_HOP:
            raise ValueError(
                f"VecAgentCrash needs one-hop delivery ({', '.join(ONE_HOP)}), got the "
                f"{name!r} protocol"
            )
        names = [f"agent_{i}" for i in range(self.n_agents)]
        chosen = names if agents is None else [agent_name(a, names) for a in agents]
        if not chosen:
            raise ValueError("agents must name at least one agent that may crash")
        self.may = np.array(sorted({names.index(a) for a in chosen}), dtype=np.int64)
        self.down = np.zeros((self.num_envs, self.n_agents), dtype=np.bool_)
        """Which agents are down after the last step ``(B, N)``."""
        self.restart_streams(None)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        """Reset the envs, every agent up; with a seed, restart each env's stream."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self.restart_streams(seed)
        self.down[:] = False
        return obs, self._with_state(infos, self.down)

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Step, move every chain, then cut the crashed agents off this step's messages."""
        resets = self.needs_reset
        obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
        if resets:
            self.down[:] = False
            return obs, rewards, terms, truncs, self._with_state(infos, self.down)
        was = self.down.copy()
        move_chains(self._table, self.may, self.crash, self.recover, self.down)
        down = self.down
        if not down.any():
            return obs, rewards, terms, truncs, self._with_state(infos, was)
        out = dict(obs)
        for key in ("mask", "public_mask"):  # (B, receiver, sender): 0 where either is down
            if key in obs:
                given = np.asarray(obs[key])
                one = given[:1] if given.strides[0] == 0 else given  # shared by every env
                out[key] = cut_off(down, np.ascontiguousarray(one),
                                   np.empty(given.shape, given.dtype))  # fmt: skip
        for key in ("server", "server_mask"):
            if key in obs:
                value = np.array(obs[key])
                value[down] = 0
                out[key] = value
        out["messages"] = heard_rows(out, int(self.protocol.public_dim))
        return out, rewards, terms, truncs, self._with_state(infos, was)

    def _with_state(self, infos: dict[str, Any], was: np.ndarray) -> dict[str, Any]:
        down = self.down
        return {
            **infos,
            "crashed": down.copy(),
            "recovered": was & ~down,
            "agents_down": row_sums(down),
        }


__all__ = ["VecAgentCrash", "move_chains"]
