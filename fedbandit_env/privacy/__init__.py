"""Differential privacy: mechanisms, the tree mechanism for continual counting, audits."""

from fedbandit_env.privacy.accountant import PrivacyAccountant
from fedbandit_env.privacy.audit import AuditResult, clopper_pearson, epsilon_lower_bound
from fedbandit_env.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    TreeMechanism,
    tree_epsilon_spent,
    tree_levels,
)

__all__ = [
    "AuditResult",
    "GaussianMechanism",
    "LaplaceMechanism",
    "PrivacyAccountant",
    "TreeMechanism",
    "clopper_pearson",
    "epsilon_lower_bound",
    "tree_epsilon_spent",
    "tree_levels",
]
