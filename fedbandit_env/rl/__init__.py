"""Adapters for reinforcement-learning libraries: learned policies on our envs.

- :class:`SingleAgentEnv`: a Gymnasium env in which one agent learns while the others
  run a given :class:`~fedbandit_env.policies.Team`;
- :class:`AgentVecEnv`: a stable-baselines3 ``VecEnv`` with one sub-env per agent, so one
  model is trained with parameters shared across agents;
- :class:`AgentVectorEnv`: every agent of a vector env as a sub-env of a Gymnasium
  ``VectorEnv``, on which Gymnasium's vector wrappers run;
- :class:`ModelTeam`: any model with ``predict`` (an SB3 model) as a Team, so the runner
  evaluates it on the same scenarios and seeds as the reference policies;
- :class:`LearnerAmong`: a model in some seats of a reference team, speaking its protocol
  (how a learner trained in ``SingleAgentEnv(speak="team")`` is evaluated).

All take any stack of our wrappers (gossip protocols, privacy, statistics) and flatten
observations themselves; the learner chooses the arm, and its message (when the env
carries messages) comes from ``message_fn`` (default: zeros).
"""

from fedbandit_env.rl.agent_vector import AgentVectorEnv
from fedbandit_env.rl.single_agent import SingleAgentEnv
from fedbandit_env.rl.stack import LearnerStack, load_model
from fedbandit_env.rl.team import LearnerAmong, ModelTeam

__all__ = [
    "AgentVecEnv",
    "AgentVectorEnv",
    "LearnerAmong",
    "LearnerStack",
    "ModelTeam",
    "SingleAgentEnv",
    "load_model",
]


def __getattr__(name: str) -> object:
    if name == "AgentVecEnv":  # stable-baselines3 is an optional dependency
        from fedbandit_env.rl.sb3 import AgentVecEnv

        return AgentVecEnv
    raise AttributeError(name)
