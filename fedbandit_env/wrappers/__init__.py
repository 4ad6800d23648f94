"""Wrappers, one concern each, composable like Gymnasium's and PettingZoo's."""

from fedbandit_env.wrappers.agent_crash import AgentCrash
from fedbandit_env.wrappers.arm_actions import ArmActions
from fedbandit_env.wrappers.base import ParallelWrapper
from fedbandit_env.wrappers.byzantine import Byzantine
from fedbandit_env.wrappers.clip import ClipRewards
from fedbandit_env.wrappers.flatten import FlattenObservations
from fedbandit_env.wrappers.gossip import Gossip
from fedbandit_env.wrappers.held_messages import HeldMessages
from fedbandit_env.wrappers.horizon_free import HorizonFree
from fedbandit_env.wrappers.link_failures import LinkFailures
from fedbandit_env.wrappers.local_statistics import LocalStatistics
from fedbandit_env.wrappers.message_delay import MessageDelay
from fedbandit_env.wrappers.message_loss import GilbertElliottLoss, MessageLoss
from fedbandit_env.wrappers.privacy import PrivateRewards
from fedbandit_env.wrappers.team_posterior import TeamPosterior

__all__ = [
    "AgentCrash",
    "ArmActions",
    "Byzantine",
    "ClipRewards",
    "FlattenObservations",
    "GilbertElliottLoss",
    "Gossip",
    "HeldMessages",
    "HorizonFree",
    "LinkFailures",
    "LocalStatistics",
    "MessageDelay",
    "MessageLoss",
    "ParallelWrapper",
    "PrivateRewards",
    "TeamPosterior",
]
