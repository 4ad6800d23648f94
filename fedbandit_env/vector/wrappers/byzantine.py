"""``Byzantine`` in vector form: chosen agents of every env send adversarial messages."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from numba import njit

from fedbandit_env.rng_kernels import generator_at, next_double_at
from fedbandit_env.type_aliases import FloatArray
from fedbandit_env.vector.wrappers.base import VecWrapper, split_actions
from fedbandit_env.wrappers.byzantine import _pick_agents, check_attack


@njit(cache=True, nogil=True)
def uniform_rows(table: Any, low: float, high: float, out: np.ndarray) -> None:  # pragma: no cover
    """Fill ``out (B, L, D)`` with env ``b``'s ``rng_b.uniform(low, high, (L, D))``, bit
    for bit (NumPy's ``low + (high - low) * next_double``, in C order).

    Examples:
        >>> from fedbandit_env.rng_kernels import generator_table
        >>> rng = np.random.default_rng(0)  # kept alive: the table holds its address
        >>> out = np.empty((1, 1, 2))
        >>> uniform_rows(generator_table([rng]), 2.0, 3.0, out)
        >>> out[0, 0].tolist() == np.random.default_rng(0).uniform(2.0, 3.0, 2).tolist()
        True
    """
    span = high - low
    n_envs, rows, width = out.shape
    for b in range(n_envs):
        rng = generator_at(table, b)
        for r in range(rows):
            for k in range(width):
                u = next_double_at(rng)
                out[b, r, k] = low + span * u


@njit(cache=True, nogil=True)
def boost_rows(
    sent: np.ndarray, head: int, m: int, targets: np.ndarray, low: float, high: float
) -> np.ndarray:  # pragma: no cover
    """The ``"boost"`` lie of every liar ``(B, L, D)``: the header (the first ``head =
    D mod M`` entries) as sent, then ``high`` at env ``b``'s target arm ``targets[b]``
    of each block of ``M`` entries and ``low`` elsewhere (the NumPy statement's values:
    no arithmetic, only copies). One pass, where the statement made five ``(B, L, D)``
    arrays (measured: 41 -> 12 us a step at ``B = 1024``, one liar, ``D = 10``).

    Examples:
        >>> boost_rows(np.full((1, 1, 5), 0.5), 1, 2, np.array([1]), 0.0, 1.0).tolist()
        [[[0.5, 0.0, 1.0, 0.0, 1.0]]]
    """
    n_envs, liars, width = sent.shape
    out = np.empty(sent.shape)
    for b in range(n_envs):
        target = targets[b]
        for j in range(liars):
            for k in range(head):
                out[b, j, k] = sent[b, j, k]
            for k in range(head, width):
                out[b, j, k] = low
            for k in range(head + target, width, m):  # the target of each block
                out[b, j, k] = high
    return out


class VecByzantine(VecWrapper):
    """:class:`~fedbandit_env.wrappers.Byzantine` for ``B`` envs: the messages of the
    agents ``agents`` (the same in every env) are replaced before the env routes them,
    by the same behaviours, clipped to the env's ``message_bounds``; ``"random"`` and a
    function draw from each env's own stream at this layer's depth, in the PettingZoo
    wrapper's order, so the lies are the same; ``"boost"`` promotes each env's worst arm
    of its instance (or ``arm``).

    **Regret**: the liars' ``regret`` and ``cumulative_regret`` ``(B, N)`` are replaced by
    their env's honest agents' mean; every agent's own values are in ``own_regret`` and
    ``own_cumulative_regret``; ``byzantine`` ``(B, N)`` marks the liars and ``corrupted``
    ``(B,)`` counts the messages rewritten at the step.

    Args:
        env: A vector env (or layer) whose actions carry messages.
        agents: Names, indices, or a count ``b`` for the last ``b`` agents.
        behaviour: One of :data:`~fedbandit_env.wrappers.byzantine.BEHAVIOURS` or a
            function ``(message, t, rng) -> message``, called per env and liar.
        low: Lowest value the ``random`` and ``boost`` adversaries send.
        high: Highest value the ``random``, ``boost`` and ``constant`` adversaries send.
        value: The ``constant`` adversary's value (default ``high``).
        arm: The arm ``boost`` promotes (default: each instance's worst arm).

    Examples:
        >>> from fedbandit_env.problems import conflicting
        >>> from fedbandit_env.vector import FederatedMABVecEnv
        >>> base = FederatedMABVecEnv(conflicting(4, 3, seed=0), horizon=3, message_dim=1,
        ...                           num_envs=2)
        >>> venv = VecByzantine(base, ["agent_3"], "constant", value=9.0)
        >>> _ = venv.reset(seed=0)
        >>> obs, _, _, _, infos = venv.step(np.zeros((2, 4), int), np.ones((2, 4, 1)))
        >>> obs["messages"][0, :, 0].tolist(), infos["byzantine"][0].tolist()
        ([1.0, 1.0, 1.0, 9.0], [False, False, False, True])
    """

    def __init__(
        self,
        env: VectorEnv,
        agents: Sequence[str | int] | int,
        behaviour: str | Callable[[FloatArray, int, np.random.Generator], Any],
        low: float = 0.0,
        high: float = 1.0,
        value: float | None = None,
        arm: int | None = None,
    ) -> None:
        super().__init__(env)
        if not self.message_dim:
            raise ValueError("VecByzantine needs an env that carries messages")
        names = [f"agent_{i}" for i in range(self.n_agents)]
        liars = _pick_agents(agents, names)
        self.liars = np.array([names.index(a) for a in liars], dtype=np.int64)
        self.honest = np.array([i for i in range(self.n_agents) if i not in self.liars])
        self.behaviour = behaviour
        self.low, self.high, self.value = check_attack(behaviour, low, high, value)
        m, d = self.n_arms, self.message_dim
        if behaviour == "boost":
            if d < m:
                raise ValueError(
                    f"behaviour 'boost' needs a block of M = {m} per-arm entries; "
                    f"the message has {d}"
                )
            if arm is not None and not 0 <= int(arm) < m:
                raise ValueError(f"arm must lie in [0, {m}), got {arm!r}")
        self.arm = arm
        lo, hi = env.unwrapped.message_bounds  # type: ignore[attr-defined]
        self._bounds = (float(lo), float(hi))
        self._targets = np.zeros(self.num_envs, dtype=np.int64)
        env.unwrapped.core.admit_forgers(self.liars)  # type: ignore[attr-defined]
        self.restart_streams(None)
        self._t = 0

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        """Reset the envs; with a seed, restart each env's stream; pick ``boost``'s
        targets on the new instances."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self.restart_streams(seed)
        self._restart()
        return obs, self._scored(infos, reset=True)

    def _restart(self) -> None:
        self._t = 0
        if self.arm is not None:
            self._targets[:] = int(self.arm)
        elif self.behaviour == "boost":
            self._targets = np.argmax(self.env.unwrapped.core.gaps, axis=1)  # type: ignore[attr-defined]

    def lies(self, sent: FloatArray) -> FloatArray:
        """The liars' messages ``(B, L, D)`` in place of what they sent (before clipping)."""
        b = self.behaviour
        if callable(b):
            out = np.empty_like(sent)
            for e in range(sent.shape[0]):
                for k in range(sent.shape[1]):
                    lie = np.asarray(b(sent[e, k].copy(), self._t, self._rngs[e]), np.float64)
                    if lie.shape != sent[e, k].shape:
                        raise ValueError(
                            f"the behaviour returned shape {lie.shape}, need {sent[e, k].shape}"
                        )
                    out[e, k] = lie
            return out
        if b == "constant":
            return np.full_like(sent, self.value)
        if b == "sign_flip":
            return -sent
        if b == "random":
            out = np.empty_like(sent)
            uniform_rows(self._table, self.low, self.high, out)
            return out
        m, d = self.n_arms, self.message_dim  # boost
        return boost_rows(np.ascontiguousarray(sent), d % m, m, self._targets, self.low,
                          self.high)  # fmt: skip

    def step(self, actions: Any, messages: Any = None) -> Any:
        """Rewrite the liars' messages, step, and score the honest agents only."""
        if self.needs_reset:
            obs, rewards, terms, truncs, infos = self.env.step(actions, messages)  # type: ignore[call-arg]
            self._restart()
            return obs, rewards, terms, truncs, self._scored(infos, reset=True)
        arms, sent = split_actions(actions, messages)
        if sent is None:
            raise ValueError("VecByzantine needs the agents' messages to corrupt")
        self._t += 1
        sent = np.array(sent, dtype=np.float64)
        if sent.shape != (self.num_envs, self.n_agents, self.message_dim):
            raise ValueError(
                f"messages must have shape {(self.num_envs, self.n_agents, self.message_dim)}, "
                f"got {sent.shape}"
            )
        with np.errstate(over="ignore", invalid="ignore"):  # float32 overflows to inf
            lies = np.clip(self.lies(sent[:, self.liars]), *self._bounds).astype(np.float32)
        sent[:, self.liars] = lies  # sent as float32, as the PettingZoo lie
        obs, rewards, terms, truncs, infos = self.env.step(arms, sent)  # type: ignore[call-arg]
        return obs, rewards, terms, truncs, self._scored(infos, reset=False)

    def _scored(self, infos: dict[str, Any], reset: bool) -> dict[str, Any]:
        out = {**infos}
        flags = np.zeros((self.num_envs, self.n_agents), dtype=bool)
        flags[:, self.liars] = True
        out["byzantine"] = flags
        out["corrupted"] = np.full(self.num_envs, 0 if reset else len(self.liars))
        for key in ("regret", "cumulative_regret"):
            own = np.asarray(infos[key], dtype=np.float64)
            out["own_" + key] = own
            if reset:
                continue
            scored = own.copy()
            scored[:, self.liars] = own[:, self.honest].mean(axis=1)[:, None]
            out[key] = scored
        return out


__all__ = ["VecByzantine", "boost_rows", "uniform_rows"]
