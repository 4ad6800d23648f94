"""The federated linear contextual bandit as a Gymnasium vector env: ``B`` envs x ``N``
agents over :class:`~fedbandit_env.core.linear.LinearCore`.

=================  ===========================================================================
Make               ``FederatedLinearVecEnv(problem, network, protocol, horizon, ...,
                   num_envs)``
Step               ``step(arms)`` or ``step(arms, messages)``: ``arms (B, N)`` ints (the
                   index of the chosen vector in the agent's decision set), ``messages
                   (B, N, D)`` floats; also ``step({"arm": .., "message": ..})``
Observations       the PettingZoo linear env's keys with leading shape ``(B, N)``:
                   ``contexts (B, N, K, d)`` float32 (each agent's decision set now),
                   ``arm``, ``reward``, ``step``, and with messages the sender-indexed
                   ``messages``/``mask`` (and ``server``/``server_mask``) of
                   :class:`~fedbandit_env.vector.FederatedMABVecEnv`; under a protocol
                   whose copies differ by receiver (GammaHops: one hop a step)
                   ``messages (B, N, N, D)`` by receiver and origin, the PettingZoo
                   observations stacked
Rewards, infos     as :class:`~fedbandit_env.vector.FederatedMABVecEnv`: ``(B, N)`` rewards;
                   ``regret`` against the global ``theta`` and the agent's own set
Autoreset          ``NEXT_STEP`` (default) or ``DISABLED``, as the MAB vector env
Seeds              ``reset(seed=s)``: env ``b`` is the PettingZoo linear env reset with
                   ``s + b`` (a list seeds each env): the same instance, decision sets,
                   rewards and messages for the same actions
=================  ===========================================================================

On NumPy; the core steps every env in one compiled call
(:func:`~fedbandit_env.core.kernels.step_linear_envs`: the PettingZoo env's step, ``B``
times, the same numbers). Without messages, or with Synchronize's or GammaHops', a linear vector
policy's compiled step plays whole episodes with no Python between steps
(``FederatedLinearVecEnv.rollout``, :meth:`LinearCore.rollout
<fedbandit_env.core.linear.LinearCore.rollout>`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from fedbandit_env.backend import backend
from fedbandit_env.core.linear import LinearCore, LinearSampler, first_problem
from fedbandit_env.core.routing import Routed
from fedbandit_env.envs.checks import check_wiring
from fedbandit_env.envs.federated_linear import check_contexts, check_pinned_problem
from fedbandit_env.network.graph import Network
from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.protocols.base import Protocol
from fedbandit_env.validation import check_int
from fedbandit_env.vector.env import (
    CoreVecEnv,
    VecObs,
    autoreset_mode_of,
    joint_spaces,
)


class FederatedLinearVecEnv(CoreVecEnv):
    """``num_envs`` federated linear bandit envs stepped as arrays (module docstring).

    Args:
        problem: A fixed instance, or a sampler each seeded episode draws one from.
        network: Communication graph (default complete).
        protocol: Delivery rule (default broadcast); each env gets its own copy.
        horizon: Steps per episode.
        message_dim: ``D`` (0: actions are bare choices).
        message_bounds: ``(low, high)`` of every message entry.
        link_costs: ``(c1, c2)``, the server and peer link costs.
        split: The instance split of a sampler.
        num_envs: ``B``.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default) or ``DISABLED``.
        validate: Check the actions' values every step.

    Examples:
        >>> from fedbandit_env.problems.linear import dubey_synthetic
        >>> from fedbandit_env.protocols import Broadcast
        >>> venv = FederatedLinearVecEnv(dubey_synthetic(3, set_size=4, dim=2, seed=0),
        ...                              protocol=Broadcast(), horizon=5, message_dim=2,
        ...                              num_envs=8)
        >>> obs, infos = venv.reset(seed=0)
        >>> obs["contexts"].shape, obs["messages"].shape
        ((8, 3, 4, 2), (8, 3, 2))
        >>> obs, rewards, terms, truncs, infos = venv.step(
        ...     np.zeros((8, 3), int), np.zeros((8, 3, 2)))
        >>> rewards.shape, bool((infos["regret"] >= 0).all()), bool(truncs.any())
        ((8, 3), True, False)
    """

    metadata: dict[str, Any] = {  # noqa: RUF012 (Gymnasium's VectorEnv attribute)
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": [],
        "name": "federated_linear_vec_v0",
    }

    def __init__(
        self,
        problem: LinearProblem | LinearSampler,
        network: Network | nx.Graph | None = None,
        protocol: Protocol | None = None,
        horizon: int = 1000,
        message_dim: int = 0,
        message_bounds: tuple[float, float] = (-np.inf, np.inf),
        link_costs: tuple[float, float] = (25.0, 1.0),
        split: str = "train",
        num_envs: int = 1,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        validate: bool = True,
    ) -> None:
        num_envs = check_int("num_envs", num_envs, 1)
        mode = autoreset_mode_of(autoreset_mode)
        first, _ = first_problem(problem, split)
        n = first.n_agents
        w = check_wiring(
            n, network, protocol, horizon, message_dim, message_bounds, link_costs, None, []
        )
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.num_envs = num_envs
        self.n_agents, self.n_arms, self.dim = n, first.set_size, first.dim
        self.horizon, self.message_dim = w.horizon, w.message_dim
        self.network, self.protocol = w.network, w.protocol
        self.message_bounds, self.link_costs = w.message_bounds, w.link_costs
        self.context_bound = max(1.0, float(first.feature_bound))
        self._reward_bounds = first.reward_bounds
        protocols = [copy.deepcopy(w.protocol) for _ in range(num_envs)]
        self.core = LinearCore(
            problem, w.network, protocols, w.horizon, w.message_dim, w.message_bounds,
            w.link_costs, split, self._check_bound,
        )  # fmt: skip
        self.backend = backend(None)
        self.validate = bool(validate)
        self.distribution = self.core.sampler
        self.render_mode = None
        self._needs_reset = True

    def _check_bound(self, problem: LinearProblem, what: str) -> None:
        check_contexts(problem, self.context_bound, what)

    @functools.cached_property
    def _joint(self) -> tuple[spaces.Dict, spaces.Space[Any]]:
        obs, act = joint_spaces(self.n_agents, self.n_arms, self.horizon, self._reward_bounds,
                                self.message_dim, self.message_bounds, self.protocol)  # fmt: skip
        bound = self.context_bound
        n, shape = self.n_agents, (self.n_agents, self.n_arms, self.dim)
        contexts = spaces.Box(-bound, bound, shape, np.float32)
        heard = dict(obs.spaces)
        if self.message_dim and not self.protocol.per_sender:  # each receiver its copies
            lo, hi = self.message_bounds
            heard["messages"] = spaces.Box(lo, hi, (n, n, self.message_dim), np.float32)
        return spaces.Dict({"contexts": contexts, **heard}), act

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[VecObs, dict[str, Any]]:
        """Start every env's episode: env ``b`` seeded ``seed + b`` (or ``seed[b]``);
        ``options={"problem": p}`` pins one instance for every env."""
        check_pinned_problem((options or {}).get("problem"), self.core, self._check_bound)
        return super().reset(seed=seed, options=options)

    def _observations(self, routed: Routed | None) -> VecObs:
        core = self.core
        b, n = self.num_envs, self.n_agents
        obs: VecObs = {
            "contexts": core.all_contexts(),
            "arm": core.last_arms.copy(),
            "reward": core.last_rewards.astype(np.float32)[..., None],
            "step": np.full((b, n, 1), core.t, np.float32),
        }
        return self._with_messages(obs, routed) if self.message_dim else obs


__all__ = ["FederatedLinearVecEnv"]
