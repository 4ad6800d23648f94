"""Environment implementations; import the versioned modules (``federated_mab_v0``) instead."""

from fedbandit_env.envs.federated_mab import FederatedMABEnv

__all__ = ["FederatedMABEnv"]
