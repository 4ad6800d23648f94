"""Vector forms of the learner's and the network's wrappers, one file per wrapper (Gymnasium's
``wrappers/vector/`` pattern), each sharing its array code with the PettingZoo one.

Examples:
    >>> from fedbandit_env.problems import conflicting
    >>> from fedbandit_env.vector import FederatedMABVecEnv
    >>> venv = VecLocalStatistics(FederatedMABVecEnv(conflicting(3, 2, seed=0), horizon=4))
    >>> sorted(venv.reset(seed=0)[0])
    ['arm', 'counts', 'means', 'reward', 'step']
"""

from fedbandit_env.vector.wrappers.agent_crash import VecAgentCrash
from fedbandit_env.vector.wrappers.base import VecWrapper, vector_depth
from fedbandit_env.vector.wrappers.byzantine import VecByzantine
from fedbandit_env.vector.wrappers.clip import VecClipRewards
from fedbandit_env.vector.wrappers.flatten import flat_rows
from fedbandit_env.vector.wrappers.held_messages import VecHeldMessages
from fedbandit_env.vector.wrappers.horizon_free import VecHorizonFree
from fedbandit_env.vector.wrappers.local_statistics import VecLocalStatistics
from fedbandit_env.vector.wrappers.message_delay import VecMessageDelay
from fedbandit_env.vector.wrappers.message_loss import VecMessageLoss
from fedbandit_env.vector.wrappers.private_rewards import VecPrivateRewards
from fedbandit_env.vector.wrappers.team_posterior import VecTeamPosterior

__all__ = [
    "VecAgentCrash",
    "VecByzantine",
    "VecClipRewards",
    "VecHeldMessages",
    "VecHorizonFree",
    "VecLocalStatistics",
    "VecMessageDelay",
    "VecMessageLoss",
    "VecPrivateRewards",
    "VecTeamPosterior",
    "VecWrapper",
    "flat_rows",
    "vector_depth",
]
