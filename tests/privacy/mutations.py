"""Known weakenings of the privacy mechanisms, applied to the package itself (issues 49, 63).

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


def _vector_no_clip() -> None:
    """``VecPrivateRewards`` releases rewards unclipped (its noise calibrated for the range)."""
    from fedbandit_env.vector.wrappers.private_rewards import VecPrivateRewards

    init = VecPrivateRewards.__init__

    def unclipped(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._tree.clip = (-np.inf, np.inf)

    VecPrivateRewards.__init__ = unclipped  # type: ignore[method-assign]


def _sub_env_noise_shared() -> None:
    """The vector trees of envs ``2k`` and ``2k + 1`` draw the same noise (a copied stream)."""
    import copy

    from fedbandit_env.privacy.batched_tree import TreeNoise

    restart = TreeNoise.restart

    def paired(self: Any, rngs: Any = None, stream: Any = None) -> None:
        if rngs is not None:
            rngs = [copy.deepcopy(rngs[b - b % 2]) for b in range(len(rngs))]
        restart(self, rngs, stream)

    TreeNoise.restart = paired  # type: ignore[method-assign]


def _agent_noise_shared() -> None:
    """In every vector tree agent 1's streams get agent 0's noise (dyadic trees)."""
    from fedbandit_env.privacy.batched_tree import BatchedTree

    step = BatchedTree.step

    def sharing(self: Any, arms: Any, rewards: Any, t: int) -> Any:
        m = self.shape[2]
        draws = self.noise.draws

        def copied(marked: Any) -> Any:
            out = draws(marked)
            if out.shape[1] == self.shape[1] * m and self.shape[1] > 1:
                out[:, m : 2 * m] = out[:, :m]
            return out

        self.noise.draws = copied
        try:
            return step(self, arms, rewards, t)
        finally:
            del self.noise.draws

    BatchedTree.step = sharing  # type: ignore[method-assign]


def _rollout_noise_halved() -> None:
    """``VecPrivateRewards``' trees step with half the Laplace scale inside a compiled
    rollout (the stepped layer keeps the calibrated one)."""
    from fedbandit_env.vector.wrappers.private_rewards import VecPrivateRewards

    rollout = VecPrivateRewards.rollout

    def halved(self: Any, *args: Any, **kwargs: Any) -> None:
        noise = self._tree.noise
        full = noise.scale
        noise.scale = full / 2
        try:
            rollout(self, *args, **kwargs)
        finally:
            noise.scale = full

    VecPrivateRewards.rollout = halved  # type: ignore[method-assign]


def _private_server_ts_raw() -> None:
    """``private_server_ts`` asks for no private rewards: in its own env it sends raw means."""
    from dataclasses import replace

    from baselines.index.server import ServerIndexPolicy

    requirements = ServerIndexPolicy.requirements

    def raw(self: Any, n_agents: int, n_arms: int) -> Any:
        return replace(requirements(self, n_agents, n_arms), epsilon=None)

    ServerIndexPolicy.requirements = raw  # type: ignore[method-assign]


MUTATIONS: dict[str, Callable[[], None]] = {
    "noise_halved": _noise_halved,
    "tree_level_reused": _tree_level_reused,
    "record_in_two_trees": _record_in_two_trees,
    "shared_stream": _shared_stream,
    "secure_noise_seeded": _secure_noise_seeded,
    "vector_no_clip": _vector_no_clip,
    "sub_env_noise_shared": _sub_env_noise_shared,
    "agent_noise_shared": _agent_noise_shared,
    "private_server_ts_raw": _private_server_ts_raw,
    "rollout_noise_halved": _rollout_noise_halved,
}
"""Each known weakening, by name."""

FIRST: dict[str, str] = {
    "vector_no_clip": "tests/vector/test_vector_private_noise.py",
    "sub_env_noise_shared": "tests/vector/test_vector_private_noise.py",
    "agent_noise_shared": "tests/vector/test_vector_private_noise.py",
    "private_server_ts_raw": "tests/privacy/test_private_releases.py",
    "rollout_noise_halved": "tests/vector/test_private_rollout.py",
}
"""The suite file expected to catch a weakening, which the runner runs first (the rest
of the suite follows it): the order only saves time, since the runner stops at the
first failure, and any failing assertion of the suite counts."""


def pytest_configure(config: Any) -> None:
    """Apply the mutation ``FEDBANDIT_MUTATION`` names (none if unset)."""
    name = os.environ.get("FEDBANDIT_MUTATION", "")
    if name:
        MUTATIONS[name]()
