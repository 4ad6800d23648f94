"""Differential privacy: mechanisms, the tree mechanism for continual counting, audits."""

from fedbandit_env.privacy.accountant import PrivacyAccountant
from fedbandit_env.privacy.audit import (
    AuditResult,
    audit,
    audit_mechanism,
    audit_views,
    clopper_pearson,
    epsilon_lower_bound,
    gaussian_audit_views,
)
from fedbandit_env.privacy.audit_env import Episode, ReplaceContexts, ReplaceReward, audit_env
from fedbandit_env.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Noise,
    TreeMechanism,
    check_noise,
    clip_range,
    noise_generator,
    tree_epsilon_spent,
    tree_levels,
)

__all__ = [
    "AuditResult",
    "Episode",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Noise",
    "PrivacyAccountant",
    "ReplaceContexts",
    "ReplaceReward",
    "TreeMechanism",
    "audit",
    "audit_env",
    "audit_mechanism",
    "audit_views",
    "check_noise",
    "clip_range",
    "clopper_pearson",
    "epsilon_lower_bound",
    "gaussian_audit_views",
    "noise_generator",
    "tree_epsilon_spent",
    "tree_levels",
]
