"""Reward models: what the world is (local means, noise)."""

from fedbandit_env.problems.mab import (
    NOISE_KINDS,
    MABProblem,
    NoiseKind,
    biased,
    conflicting,
    homogeneous,
    zhu_synthetic,
)

__all__ = [
    "NOISE_KINDS",
    "MABProblem",
    "NoiseKind",
    "biased",
    "conflicting",
    "homogeneous",
    "zhu_synthetic",
]
