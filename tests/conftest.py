"""Shared fixtures."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from fedbandit_env.privacy import mechanisms


@pytest.fixture
def entropy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Secure noise's OS entropy from a source no run seed gives (a test of secure noise
    is then deterministic); counts the fresh generators drawn."""
    source = np.random.SeedSequence(4949)
    calls: list[int] = []

    def fresh() -> np.random.Generator:
        calls.append(1)
        return np.random.default_rng(source.spawn(1)[0])

    monkeypatch.setattr(mechanisms, "fresh_generator", fresh)
    return calls
