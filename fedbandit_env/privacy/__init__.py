"""Differential privacy: mechanisms, the tree mechanism for continual counting, audits.

The black-box audit harness that plays envs (:mod:`fedbandit_env.wrappers.audit`:
``audit_env``, ``ReplaceReward``, ``ReplaceContexts``, ``Episode``) lives with the
wrappers it is built on, so this package stays below them."""

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
    tree_noise_variance,
)

__all__ = [
    "AuditResult",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Noise",
    "PrivacyAccountant",
    "TreeMechanism",
    "audit",
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
    "tree_noise_variance",
]
