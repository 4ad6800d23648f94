"""Differential privacy: mechanisms, the tree mechanism for continual counting, audits."""

from fedbandit_env.privacy.accountant import PrivacyAccountant
from fedbandit_env.privacy.audit import (
    AuditResult,
    audit,
    audit_mechanism,
    audit_views,
    clopper_pearson,
    epsilon_lower_bound,
)
from fedbandit_env.privacy.audit_env import Episode, ReplaceContexts, ReplaceReward, audit_env
from fedbandit_env.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    TreeMechanism,
    clip_range,
    tree_epsilon_spent,
    tree_levels,
)

__all__ = [
    "AuditResult",
    "Episode",
    "GaussianMechanism",
    "LaplaceMechanism",
    "PrivacyAccountant",
    "ReplaceContexts",
    "ReplaceReward",
    "TreeMechanism",
    "audit",
    "audit_env",
    "audit_mechanism",
    "audit_views",
    "clip_range",
    "clopper_pearson",
    "epsilon_lower_bound",
    "tree_epsilon_spent",
    "tree_levels",
]
