"""Known weakenings of the privacy mechanisms, applied to the package itself (issue 49).

Loaded as a pytest plugin (``-p mutations``, with this folder on ``PYTHONPATH``) with
``FEDBANDIT_MUTATION`` naming one of :data:`MUTATIONS`; it patches the package at
``pytest_configure``, before any test imports it, and the privacy suite must then fail.
``tests/privacy/test_mutations.py`` runs the suite once per mutation.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np


def _noise_halved() -> None:
    """Every mechanism draws half the noise its claim is calibrated for."""
    from baselines.linear.policies import TreePrivateLinUCB
    from fedbandit_env.privacy import mechanisms

    init = mechanisms.TreeMechanism.__init__

    def tree_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.scale *= 0.5

    mechanisms.TreeMechanism.__init__ = tree_init  # type: ignore[method-assign]
    laplace = mechanisms.LaplaceMechanism.scale.fget
    mechanisms.LaplaceMechanism.scale = property(lambda self: 0.5 * laplace(self))  # type: ignore[assignment,misc]
    calibrate = TreePrivateLinUCB._calibrate

    def linear_calibrate(self: Any, *args: Any) -> Any:
        out = calibrate(self, *args)
        self.noise_std *= 0.5
        return out

    TreePrivateLinUCB._calibrate = linear_calibrate  # type: ignore[method-assign]


def _tree_level_reused() -> None:
    """The binary tree draws one noise per (tree, level): every node of a level reuses it."""
    from fedbandit_env.privacy import mechanisms
    from fedbandit_env.privacy.tree_kernels import lowest_bit

    step = mechanisms.TreeMechanism.step

    def reusing_step(self: Any, values: Any, present: Any = None) -> Any:
        base = getattr(self, "_mutant_seed", None)
        if base is None:
            base = self._mutant_seed = int(self.rng.integers(2**62))
        self.rng = np.random.default_rng([base, lowest_bit(self.t + 1)])
        return step(self, values, present)

    mechanisms.TreeMechanism.step = reusing_step  # type: ignore[method-assign]


def _record_in_two_trees() -> None:
    """Decentralized FedUCB adds every record to the next estimator's tree as well."""
    from baselines.linear.decentralized import DecFedLinUCB

    act = DecFedLinUCB.act

    def two_trees(self: Any, observation: Any) -> Any:
        if int(observation["step"][0]) > 0 and self.epsilon is not None:
            x, y = self._clip(self.last_x, float(observation["reward"][0]))
            z = np.append(x, y)
            self.leaf[(self.last_g + 1) % self.gamma] += np.outer(z, z)
        return act(self, observation)

    DecFedLinUCB.act = two_trees  # type: ignore[method-assign]


def _shared_stream() -> None:
    """Every wrapper of a stack draws from the stream of depth 0 (one shared stream)."""
    from fedbandit_env import seeding
    from fedbandit_env.scenario import plan
    from fedbandit_env.wrappers import base

    original = seeding.wrapper_generator

    def shared(seed: Any, depth: int = 0) -> np.random.Generator:
        return original(seed, 0)

    for module in (seeding, base, plan):
        module.wrapper_generator = shared  # type: ignore[attr-defined]


def _secure_noise_seeded() -> None:
    """``noise="secure"`` draws from the run's seeded streams (what the fast path did)."""
    from baselines.elimination import policies as elimination
    from baselines.linear import policies as linear
    from fedbandit_env.privacy import mechanisms
    from fedbandit_env.wrappers.privacy import PrivateRewards

    def seeded(noise: Any, seed: Any) -> np.random.Generator:
        return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    for module in (mechanisms, elimination, linear):
        module.noise_generator = seeded  # type: ignore[attr-defined]
    reset = PrivateRewards.reset

    def seeded_reset(self: Any, seed: Any = None, options: Any = None) -> Any:
        noise, self.noise = self.noise, "seeded"
        try:
            return reset(self, seed=seed, options=options)
        finally:
            self.noise = noise

    PrivateRewards.reset = seeded_reset  # type: ignore[method-assign]


MUTATIONS: dict[str, Callable[[], None]] = {
    "noise_halved": _noise_halved,
    "tree_level_reused": _tree_level_reused,
    "record_in_two_trees": _record_in_two_trees,
    "shared_stream": _shared_stream,
    "secure_noise_seeded": _secure_noise_seeded,
}
"""Each known weakening, by name."""


def pytest_configure(config: Any) -> None:
    """Apply the mutation ``FEDBANDIT_MUTATION`` names (none if unset)."""
    name = os.environ.get("FEDBANDIT_MUTATION", "")
    if name:
        MUTATIONS[name]()
