"""What every adapter shares: the learner's reward and its observation batches (the
arm space and the packing of arms into env actions are
:mod:`fedbandit_env.wrappers.arm_actions`')."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from fedbandit_env.type_aliases import AgentID, Observation
from fedbandit_env.wrappers.flatten import flatten_observation

REWARDS = ("local", "neg_regret", "team")


def check_reward(reward: str) -> str:
    """Validate the learner's reward signal:

    - ``"local"``: the env's reward, what the agent observes (the default);
    - ``"neg_regret"``: minus the agent's own step pseudo-regret against the global means
      (privileged: for training only);
    - ``"team"``: minus the agents' *mean* step pseudo-regret, the same for every agent
      (privileged, cooperative: one agent is paid when the team finds the global best
      arm, so sharing what it learned pays). The mean of the agents' *local* rewards is
      not offered as a team reward: in expectation it is the sum of each agent's local
      mean of its own pull, which every agent maximises alone by playing its locally
      best arm - exactly the bias the federation exists to overcome.

    Examples:
        >>> check_reward("local")
        'local'
    """
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
    return reward


def learner_rewards(
    reward: str,
    rewards: dict[AgentID, float],
    infos: dict[AgentID, dict[str, Any]],
    agents: list[AgentID],
) -> list[float]:
    """The rewards ``agents`` are trained on after one env step (see :func:`check_reward`).

    Examples:
        >>> infos = {"a": {"regret": 0.25}, "b": {"regret": 0.75}}
        >>> learner_rewards("neg_regret", {"a": 1.0, "b": 0.0}, infos, ["a", "b"])
        [-0.25, -0.75]
        >>> learner_rewards("team", {"a": 1.0, "b": 0.0}, infos, ["a"])
        [-0.5]
    """
    if reward == "local":
        return [float(rewards[a]) for a in agents]
    if reward == "neg_regret":
        return [-float(infos[a]["regret"]) for a in agents]
    team = -float(np.mean([float(info["regret"]) for info in infos.values()]))
    return [team for _ in agents]


def scale_box(box: spaces.Box) -> tuple[np.ndarray, np.ndarray]:
    """``(offset, factor)`` mapping each finite-bounded entry of a flat box onto
    ``[-1, 1]`` (``x * factor + offset``); unbounded entries pass unchanged.

    Counts and the step run up to the horizon: unscaled, they dwarf means in ``[0, 1]``
    and a small network learns slowly from them.

    Examples:
        >>> off, fac = scale_box(spaces.Box(np.array([0.0, -np.inf]), np.array([200.0, np.inf])))
        >>> np.round(np.array([200.0, 5.0]) * fac + off, 6).tolist()
        [1.0, 5.0]
    """
    low, high = box.low.astype(np.float64), box.high.astype(np.float64)
    finite = np.isfinite(low) & np.isfinite(high) & (high > low)
    factor = np.where(finite, 2.0 / np.where(finite, high - low, 1.0), 1.0)
    offset = np.where(finite, -1.0 - low * factor, 0.0)
    return offset.astype(np.float32), factor.astype(np.float32)


def batch_observations(
    space: spaces.Space[Any],
    observations: dict[AgentID, Observation],
    agents: list[AgentID],
    flatten: bool,
    scale: tuple[np.ndarray, np.ndarray] | None = None,
) -> Any:
    """The agents' observations as one batch, agent by agent: an ``(N, D)`` float32 array
    when flattening, else a dict of stacked arrays (SB3's ``MultiInputPolicy`` layout).

    Examples:
        >>> sp = spaces.Dict({"a": spaces.Discrete(2)})
        >>> batch_observations(sp, {"x": {"a": 1}, "y": {"a": 0}}, ["x", "y"], True).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    if flatten:
        batch = np.stack([flatten_observation(space, observations[a]) for a in agents])
        if scale is not None:
            offset, factor = scale
            batch = batch * factor + offset
        return batch
    keys = list(observations[agents[0]])
    return {k: np.stack([np.asarray(observations[a][k]) for a in agents]) for k in keys}
