"""Shared fixtures."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import os
from collections.abc import Iterator

import numpy as np
import pytest

from fedbandit_env.privacy import mechanisms


@pytest.fixture(autouse=True, scope="session")
def sb3_folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The logger folders SB3 makes for a model the tests train directly (``SB3_LOGDIR``),
    in the session's temporary tree instead of one each in the system's temporary
    directory (the package's own training sets a logger that makes none:
    ``rl.common.quiet_logger``)."""
    before = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3"))
    yield
    if before is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = before


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
