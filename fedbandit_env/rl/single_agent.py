"""One learner among given policies, as a Gymnasium env."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.policies import Team
from fedbandit_env.rl.common import check_reward, learner_rewards
from fedbandit_env.seeding import int_seed, spawn
from fedbandit_env.type_aliases import AgentID, Observation
from fedbandit_env.wrappers.arm_actions import MessageFn, arm_space, pack
from fedbandit_env.wrappers.flatten import flat_box, flatten_observation


class SingleAgentEnv(gym.Env[Any, np.int64]):
    """Agent ``agent`` learns; every other agent acts as ``others`` decides.

    Each ``reset(seed=s)`` resets the parallel env and the team from seeds derived from
    ``s`` (and later seedless resets continue deterministically from it), so a seeded
    training run is reproducible.

    Args:
        env: A parallel env, with any stack of wrappers (Dict observations).
        others: The team acting for everyone else; it is reset on the whole env and asked
            only for the other agents' actions (its member for the learner stays idle),
            unless ``speak="team"``.
        agent: The learner.
        reward: ``"own"`` (the learner's own reward), ``"neg_regret"`` (minus its
            pseudo-regret) or ``"team"`` (minus the agents' mean pseudo-regret): the last
            two are privileged information, for training signals only
            (:func:`~fedbandit_env.rl.common.check_reward`).
        flatten: Present observations as one float32 ``Box`` (what SB3's MLPs need).
        message_fn: The learner's message when the env carries messages (default zeros).
        speak: ``"own"``: the learner sends ``message_fn``'s message; ``"team"``: it
            speaks the others' protocol - the team's member for the learner sees the
            learner's observations (its pulls, rewards and messages), keeps its state as
            if it had pulled those arms, and its message is sent; only its arm is
            replaced by the learner's. A learner among Gossip_UCB agents then gossips
            exactly as a Gossip_UCB agent with its pulls would (the team must read the
            pulled arm from ``observation["arm"]``, as every reference policy does).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> from fedbandit_env.registry import make
        >>> env = SingleAgentEnv(federated_mab_v0.parallel_env(n_arms=3, horizon=4),
        ...                      make("local_ucb"))
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, env.action_space
        ((5,), Discrete(3))
        >>> obs, reward, terminated, truncated, info = env.step(2)
        >>> int(np.argmax(obs[:3])), truncated
        (2, False)
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        env: ParallelEnv[Any, Any, Any],
        others: Team,
        agent: AgentID = "agent_0",
        reward: str = "own",
        flatten: bool = True,
        message_fn: MessageFn | None = None,
        speak: str = "own",
    ) -> None:
        if speak not in ("own", "team"):
            raise ValueError(f"speak must be 'own' or 'team', got {speak!r}")
        if speak == "team" and message_fn is not None:
            raise ValueError("speak='team' sends the team's message: give no message_fn")
        if not isinstance(env, ParallelEnv):
            raise TypeError(f"env must be a PettingZoo ParallelEnv, got {type(env).__name__}")
        if not isinstance(others, Team):
            raise TypeError(f"others must be a Team, got {type(others).__name__}")
        if agent not in env.possible_agents:
            raise ValueError(f"agent must be one of {env.possible_agents}, got {agent!r}")
        self.env, self.others, self.agent = env, others, agent
        self.reward_kind = check_reward(reward)
        self.flatten = flatten
        self.message_fn = message_fn
        self.speak = speak
        self._inner = env.observation_space(agent)
        self.observation_space = flat_box(self._inner) if flatten else self._inner
        arm, self._message_dim = arm_space(env, agent)
        self.action_space: spaces.Discrete = arm
        self._obs: dict[AgentID, Observation] = {}
        self._team_rng = np.random.default_rng()

    @property
    def dict_space(self) -> spaces.Space[Any]:
        """The learner's observation space before flattening (its Dict of entries)."""
        return self._inner

    def _view(self, observation: Observation) -> Any:
        if self.flatten:
            return flatten_observation(self._inner, observation)
        return observation

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the env and the other agents' team."""
        super().reset(seed=seed)
        env_seed: int | None = None
        if seed is not None:
            env_part, team_part = spawn(seed, 2)
            env_seed = int_seed(env_part)
            self._team_rng = np.random.default_rng(team_part)
        obs, infos = self.env.reset(seed=env_seed, options=options)
        self.others.reset(self.env, seed=int(self._team_rng.integers(2**32)))
        self._obs = obs
        return self._view(obs[self.agent]), dict(infos.get(self.agent, {}))

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The learner pulls ``action``; the others act; return the learner's view."""
        if not self._obs:
            raise RuntimeError("step() before reset()")
        flat = np.asarray(action).reshape(-1)
        if flat.size != 1 or not self.action_space.contains(np.int64(flat[0])):
            raise ValueError(f"action must be an arm in {self.action_space}, got {action!r}")
        if self.speak == "team":  # the learner's member updates its state and speaks
            actions = self.others.act(self._obs)
            spoken = actions[self.agent]
            if not isinstance(spoken, dict) or "message" not in spoken:
                raise ValueError(f"speak='team' needs a team that sends messages, got {spoken!r}")
            actions[self.agent] = {"arm": int(flat[0]), "message": spoken["message"]}
        else:
            others = {a: o for a, o in self._obs.items() if a != self.agent}
            actions = self.others.act(others)
            actions[self.agent] = pack(
                flat[0], self.agent, self._obs[self.agent], self._message_dim, self.message_fn
            )
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        info = dict(infos[self.agent])
        (reward,) = learner_rewards(self.reward_kind, rewards, infos, [self.agent], obs)
        done = terms[self.agent] or truncs[self.agent]
        self._obs = {} if done else obs
        return (
            self._view(obs[self.agent]),
            reward,
            bool(terms[self.agent]),
            bool(truncs[self.agent]),
            info,
        )


def make_single_agent(
    others: str | None = None,
    setting: str = "local",
    epsilon: float | None = None,
    instances: str = "train",
    reward: str = "own",
    **scenario: Any,
) -> SingleAgentEnv:
    """The single-agent view as Gymnasium makes it: ``agent_0`` learns in an information
    setting on drawn instances, among registered policies ``others``
    (``gymnasium.make("fedbandit/FederatedMABSingle-v0", ...)``).

    Args:
        others: Registered id of the other agents' policy (``None``: the one
            registered with the tag ``local``, the no-communication reference).
        setting: The information setting (its stack is the learner's, see
            :meth:`~fedbandit_env.rl.LearnerStack.for_setting`).
        epsilon: Privacy of a ``+private`` setting.
        instances: ``"train"`` (default) or ``"held_out"`` instances.
        reward: The learner's training signal (see :class:`SingleAgentEnv`).
        **scenario: Further :class:`~fedbandit_env.scenario.scenario.Scenario` fields
            (``n_agents``, ``n_arms``, ``horizon``, ...; horizon default 200).

    Among a team that sends messages (Gossip_UCB, Fed_UCB) in a setting that carries
    them, the learner speaks the team's protocol (``speak="team"``): it hears the
    team's messages and its own are those its team member would send after its pulls.

    Examples:
        >>> import gymnasium as gym
        >>> import fedbandit_env
        >>> env = gym.make("fedbandit/FederatedMABSingle-v0", n_agents=3, n_arms=3)
        >>> env.action_space, env.unwrapped.others.name
        (Discrete(3), 'local_ucb')
    """
    from fedbandit_env.registry import make, tagged
    from fedbandit_env.rl.stack import LearnerStack
    from fedbandit_env.scenario.scenario import Scenario

    scenario.setdefault("horizon", 200)
    built = Scenario(instances=instances, setting=setting, epsilon=epsilon, **scenario)
    stack = LearnerStack.for_setting(setting, epsilon)
    if others is None:
        local = tagged("local")
        if not local:
            raise ValueError("no policy is registered with the tag 'local': name others=")
        others = local[0]
    team = make(others)
    needs = team.requirements(built.n_agents, built.n_arms)
    speak = "team" if needs.message_dim and stack.share_means else "own"
    if speak == "own":
        needs = needs.merge(stack.requirements(built.n_arms))
    elif stack.epsilon is not None:  # the team's messages, the setting's privacy
        needs = needs.merge(replace(stack, share_means=False).requirements(built.n_arms))
    env = built.make_env(needs)
    if stack.epsilon is None:
        from fedbandit_env.wrappers.local_statistics import LocalStatistics

        env = LocalStatistics(env)
    message_fn = stack.message_fn if speak == "own" else None
    return SingleAgentEnv(env, team, reward=reward, message_fn=message_fn, speak=speak)
