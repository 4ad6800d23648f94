"""What every adapter shares: the learner's reward and its observation batches (the
arm space and the packing of arms into env actions are
:mod:`fedbandit_env.wrappers.arm_actions`')."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from gymnasium import spaces

from fedbandit_env.type_aliases import AgentID, Observation
from fedbandit_env.wrappers.flatten import flatten_batch

REWARDS = ("own", "team_value", "neg_regret", "team")
PRIVILEGED_REWARDS = ("neg_regret", "team")
REWARD_ALIASES = {"local": "own"}
"""Former reward names, still read (saved stacks, old scripts): ``"local"`` is now
``"own"``, so that "local" means one thing (the setting without messages)."""


def check_reward(reward: str) -> str:
    """Validate the learner's reward signal:

    - ``"own"``: the env's reward, what the agent observes (the default; formerly
      ``"local"``, still read with a ``DeprecationWarning``);
    - ``"team_value"`` (honest, cooperative): the team's estimate of the global mean of
      the arm the agent pulled, from what the agent observes only
      (:func:`team_value`): its own mean of that arm and the means its neighbours sent.
      The global mean is the average over agents, so an agent is paid for the arm the
      *team* values, not the one its biased local rewards favour; it needs the means in
      the observation (``LocalStatistics`` or ``PrivateRewards``) and, to be more than
      the local mean, neighbours who send theirs (``share_means``);
    - ``"neg_regret"``: minus the agent's own step pseudo-regret against the global means
      (privileged: for training only);
    - ``"team"``: minus the agents' *mean* step pseudo-regret, the same for every agent
      (privileged, cooperative: one agent is paid when the team finds the global best
      arm, so sharing what it learned pays). The mean of the agents' *local* rewards is
      not offered as a team reward: in expectation it is the sum of each agent's local
      mean of its own pull, which every agent maximises alone by playing its locally
      best arm - exactly the bias the federation exists to overcome.

    Examples:
        >>> check_reward("own")
        'own'
    """
    if reward in REWARD_ALIASES:
        new = REWARD_ALIASES[reward]
        warnings.warn(
            f"the reward {reward!r} is now called {new!r}", DeprecationWarning, stacklevel=2
        )
        reward = new
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
    return reward


def team_value(observation: Observation) -> float:
    """The honest team-value reward: the mean, over the agent and every neighbour it holds
    a message from, of their means of the arm it just pulled (``observation["arm"]``).

    The agent's own mean is ``private_means`` under ``PrivateRewards``, else ``means``
    (``LocalStatistics``); neighbours' means are the latest held ones (``held`` where
    ``heard``, under ``HeldMessages``) or this step's (``messages`` where ``mask``). Every
    agent weighs the same, as in the global mean ``mu_k = (1/N) sum_i mu_{i,k}``.
    *Reading*: a neighbour's mean of an arm it never pulled is 0 in its message (means
    carry no counts), so early on the estimate leans to 0; it is an honest signal, not an
    unbiased one.

    Raises:
        ValueError: If the observation carries no means.

    Examples:
        >>> obs = {"arm": 1, "means": [0.2, 0.9], "messages": [[0.0, 0.0], [0.5, 0.3]],
        ...        "mask": [0, 1]}
        >>> round(team_value(obs), 6)
        0.6
    """
    key = "private_means" if "private_means" in observation else "means"
    if key not in observation:
        raise ValueError(
            "the team_value reward needs the agent's means in its observation "
            "(LocalStatistics or PrivateRewards: a stack with statistics=True)"
        )
    arm = int(np.asarray(observation["arm"]).reshape(-1)[0])
    own = float(np.asarray(observation[key], dtype=np.float64)[arm])
    if "held" in observation:
        messages, heard = observation["held"], observation["heard"]
    elif "messages" in observation:
        messages, heard = observation["messages"], observation["mask"]
    else:
        return own
    table = np.asarray(messages, dtype=np.float64)
    if table.ndim != 2 or table.shape[1] <= arm:
        return own  # messages that are not means (a team's own protocol)
    rows = np.flatnonzero(np.asarray(heard))
    return (own + float(table[rows, arm].sum())) / (1 + rows.size)


def learner_rewards(
    reward: str,
    rewards: dict[AgentID, float],
    infos: dict[AgentID, dict[str, Any]],
    agents: list[AgentID],
    observations: dict[AgentID, Observation] | None = None,
) -> list[float]:
    """The rewards ``agents`` are trained on after one env step (see :func:`check_reward`);
    ``team_value`` reads the step's ``observations``.

    Examples:
        >>> infos = {"a": {"regret": 0.25}, "b": {"regret": 0.75}}
        >>> learner_rewards("neg_regret", {"a": 1.0, "b": 0.0}, infos, ["a", "b"])
        [-0.25, -0.75]
        >>> learner_rewards("team", {"a": 1.0, "b": 0.0}, infos, ["a"])
        [-0.5]
    """
    if reward == "own":
        return [float(rewards[a]) for a in agents]
    if reward == "team_value":
        if observations is None:
            raise ValueError("the team_value reward needs the step's observations")
        return [team_value(observations[a]) for a in agents]
    if reward == "neg_regret":
        return [-float(infos[a]["regret"]) for a in agents]
    team = -float(np.mean([float(info["regret"]) for info in infos.values()]))
    return [team for _ in agents]


def check_episode_lengths(
    lengths: tuple[int, int] | None, horizon: int | None
) -> tuple[int, int] | None:
    """``episode_lengths`` checked: ``1 <= low <= high <= horizon`` (``None``: the env's
    horizon, no cut).

    Examples:
        >>> check_episode_lengths((2, 8), 10), check_episode_lengths(None, 10)
        ((2, 8), None)
    """
    if lengths is None:
        return None
    low, high = (int(v) for v in lengths)
    if not 1 <= low <= high or (horizon is not None and high > int(horizon)):
        raise ValueError(
            f"episode_lengths must be 1 <= low <= high <= the env's horizon "
            f"({horizon}), got {lengths!r}"
        )
    return low, high


def draw_episode_length(rng: np.random.Generator, lengths: tuple[int, int] | None) -> int:
    """An episode's cut, log-uniform in ``low..high`` (0: no cut).

    Examples:
        >>> 3 <= draw_episode_length(np.random.default_rng(0), (3, 9)) <= 9
        True
    """
    if lengths is None:
        return 0
    low, high = lengths
    return round(float(np.exp(rng.uniform(np.log(low), np.log(high)))))


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


def scaled_space(box: spaces.Box) -> tuple[spaces.Box, tuple[np.ndarray, np.ndarray]]:
    """The flat box an SB3 adapter shows when it scales (:func:`scale_box`), and the
    scaling itself.

    Examples:
        >>> space, (off, fac) = scaled_space(spaces.Box(0.0, 4.0, (2,)))
        >>> space.low.tolist(), space.high.tolist()
        ([-1.0, -1.0], [1.0, 1.0])
    """
    scale = scale_box(box)
    low = box.low * scale[1] + scale[0]
    high = box.high * scale[1] + scale[0]
    return spaces.Box(low.astype(np.float32), high.astype(np.float32)), scale


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
        batch = flatten_batch(space, [observations[a] for a in agents])
        if scale is not None:
            offset, factor = scale
            batch = batch * factor + offset
        return batch
    keys = list(observations[agents[0]])
    return {k: np.stack([np.asarray(observations[a][k]) for a in agents]) for k in keys}


def set_torch_threads(threads: int | None = 1) -> int:
    """Set torch's intra-op thread count (``None``: leave it); returns the count in use.

    Examples:
        >>> set_torch_threads(None) >= 1
        True
    """
    import torch

    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be an int >= 1 or None, got {threads!r}")
        torch.set_num_threads(threads)
    return int(torch.get_num_threads())


def quiet_logger(model: Any) -> Any:
    """Give a stable-baselines3 ``model`` a logger that writes nothing and makes no
    folder; returns the model.

    With ``verbose=0`` and no ``tensorboard_log``, SB3's ``learn()`` configures a logger
    whose folder is a fresh ``SB3-<date>`` under the system's temporary directory
    (``stable_baselines3.common.logger.configure``), left there empty after every call:
    hundreds of them after a test run or a sweep. A logger set on the model is used
    instead (SB3's ``set_logger``); this one keeps the values ``learn()`` records (its
    ``name_to_value``) and writes them nowhere.

    Examples:
        >>> from stable_baselines3 import PPO
        >>> from gymnasium.envs.classic_control import CartPoleEnv
        >>> model = quiet_logger(PPO("MlpPolicy", CartPoleEnv(), n_steps=64, batch_size=64))
        >>> model.logger.dir is None, model.logger.output_formats
        (True, [])
    """
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model
