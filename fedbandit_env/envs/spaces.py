"""The observation and action spaces of a bandit env (see the table in
:mod:`fedbandit_env.envs.federated_mab`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from fedbandit_env.protocols.base import Protocol


def observation_space(
    n_agents: int,
    n_arms: int,
    horizon: int,
    reward_bounds: tuple[float, float],
    message_dim: int,
    message_bounds: tuple[float, float],
    protocol: Protocol,
) -> spaces.Dict:
    """One agent's observation space: its arm, reward and step; with messages, what it
    received (``messages``, ``mask``, ``public_mask`` for a public prefix, ``server``
    and ``server_mask`` for a server protocol).

    Examples:
        >>> from fedbandit_env.protocols import Broadcast
        >>> sorted(observation_space(3, 2, 10, (0.0, 1.0), 4, (-1.0, 1.0), Broadcast()))
        ['arm', 'mask', 'messages', 'reward', 'step']
    """
    r_lo, r_hi = reward_bounds
    obs: dict[str, spaces.Space[Any]] = {
        "arm": spaces.Discrete(n_arms),
        "reward": spaces.Box(r_lo, r_hi, shape=(1,), dtype=np.float32),
        "step": spaces.Box(0.0, float(horizon), shape=(1,), dtype=np.float32),
    }
    if message_dim:
        lo, hi = message_bounds
        obs["messages"] = spaces.Box(lo, hi, shape=(n_agents, message_dim), dtype=np.float32)
        obs["mask"] = spaces.MultiBinary(n_agents)
        if protocol.public_dim:
            obs["public_mask"] = spaces.MultiBinary(n_agents)
        if protocol.has_server:
            obs["server"] = spaces.Box(-np.inf, np.inf, shape=(message_dim,), dtype=np.float32)
            obs["server_mask"] = spaces.MultiBinary(1)
    return spaces.Dict(obs)


def action_space(
    n_arms: int, message_dim: int, message_bounds: tuple[float, float]
) -> spaces.Space[Any]:
    """``Discrete(M)``, or with messages ``Dict(arm=Discrete(M), message=Box(D))``.

    Examples:
        >>> action_space(3, 0, (0.0, 1.0))
        Discrete(3)
    """
    arm = spaces.Discrete(n_arms)
    if not message_dim:
        return arm
    lo, hi = message_bounds
    msg = spaces.Box(lo, hi, shape=(message_dim,), dtype=np.float32)
    return spaces.Dict({"arm": arm, "message": msg})


def state_space(
    n_agents: int, n_arms: int, reward_bounds: tuple[float, float], horizon: int
) -> spaces.Box:
    """The space of :func:`joint_state`.

    Examples:
        >>> state_space(2, 3, (0.0, 1.0), 10).shape
        (9,)
    """
    r_lo, r_hi = reward_bounds
    low = np.tile(np.r_[np.zeros(n_arms), min(r_lo, 0.0)], n_agents)
    high = np.tile(np.r_[np.ones(n_arms), max(r_hi, 0.0)], n_agents)
    return spaces.Box(
        np.r_[low, 0.0].astype(np.float32),
        np.r_[high, float(horizon)].astype(np.float32),
        dtype=np.float32,
    )


def joint_state(arms: np.ndarray, rewards: np.ndarray, t: int, n_arms: int) -> np.ndarray:
    """The env's global state (PettingZoo's ``state()``): each agent's last arm
    (one-hot) and reward, then the step; float32 ``(N (M + 1) + 1,)``, zeros before the
    first step. It holds no means or regret: a centralized critic trained on it sees the
    agents' joint view, not the instance.

    Examples:
        >>> joint_state(np.array([1, 0]), np.array([0.5, 1.0]), 1, 2).tolist()
        [0.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0]
    """
    n = len(arms)
    out = np.zeros((n, n_arms + 1), dtype=np.float32)
    if t:
        out[np.arange(n), arms] = 1.0
        out[:, n_arms] = rewards
    return np.concatenate([out.ravel(), np.array([t], dtype=np.float32)])


__all__ = ["action_space", "joint_state", "observation_space", "state_space"]
