"""Scenarios: everything that defines a benchmark setting, as one frozen dataclass."""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.envs.federated_linear import FederatedLinearEnv
from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.network.graph import Network, make_components, make_network
from fedbandit_env.policies import Requirements
from fedbandit_env.problems.distribution import ProblemDistribution
from fedbandit_env.problems.linear import LinearProblem
from fedbandit_env.problems.mab import NoiseKind
from fedbandit_env.protocols import make_protocol
from fedbandit_env.protocols.base import Protocol
from fedbandit_env.scenario.checks import check_scenario
from fedbandit_env.scenario.faults import FAULT_DEFAULTS, fault_layers, has_faults
from fedbandit_env.scenario.instances import drawn, instance_spec
from fedbandit_env.scenario.plan import Layer, StackPlan
from fedbandit_env.seeding import instance_seed
from fedbandit_env.settings import get_setting
from fedbandit_env.wrappers.base import vector_form
from fedbandit_env.wrappers.clip import ClipRewards
from fedbandit_env.wrappers.privacy import PrivateRewards


@functools.lru_cache(maxsize=64)
def _network(
    graph: str, n_agents: int, seed: int, components: tuple[int, ...] | None, p: float | None
) -> Network:
    """:meth:`Scenario.network`, built once per distinct graph."""
    if components is not None:
        kwargs = {"p": p} if p is not None else {}
        return make_components(tuple(components), graph, seed=seed, **kwargs)
    if p is not None:
        if graph != "erdos_renyi":
            raise ValueError(f"graph_p applies to 'erdos_renyi' only, not {graph!r}")
        return make_network(graph, n_agents, seed=seed, p=p)
    return make_network(graph, n_agents, seed=seed)


@dataclass(frozen=True)
class Scenario:
    """A federated MAB setting: problem generator, graph and horizon, all seeded.

    Attributes:
        n_agents: Agents ``N``.
        n_arms: Arms ``M``.
        instance: ``"biased"`` (the default, :func:`~fedbandit_env.problems.biased`:
            zero-sum agent biases, no one-agent shortcut; what ``fedbandit train``
            learns on), ``"conflicting"`` (:func:`~fedbandit_env.problems.conflicting`:
            a misled share of agents, while the others' own best arm is the global
            best), ``"zhu"`` (:func:`~fedbandit_env.problems.zhu_synthetic`),
            ``"homogeneous"``, ``"diabetes"`` (Zhu et al.'s real data,
            :func:`~fedbandit_env.problems.diabetes.diabetes`: 5 arms, Bernoulli; the
            records cut in file order into ``n_agents`` hospitals, or split at random
            per instance seed for ``instances="train"/"held_out"``), or the linear
            contextual ``"dubey"`` or ``"diabetes_linear"`` (the same records, patient
            features as contexts, one patient's 5 medications a decision set:
            :func:`~fedbandit_env.problems.diabetes.diabetes_linear`; ``dim`` is 40)
            (:func:`~fedbandit_env.problems.linear.dubey_synthetic`: ``n_arms`` is then
            the decision-set size ``K`` and ``dim`` the dimension ``d``). Any kind of
            the instance table (:mod:`~fedbandit_env.scenario.instances`): a family's
            (``register_instance``) or one's own problem object
            (``instance=custom_instance(problem, "mine")``).
        conflict_fraction: Share of misled agents (conflicting instances).
        gap: Guaranteed global gap (conflicting and biased instances).
        noise: Reward noise kind.
        sigma: Gaussian noise scale.
        graph: Graph kind, see :data:`~fedbandit_env.network.GRAPH_KINDS`.
        horizon: Steps ``T``.
        seed: Seed of the instance and of a random graph (not of the runs).
        protocol: Delivery rule for policies that talk
            (:data:`~fedbandit_env.protocols.PROTOCOLS`).
        estimator: Tree estimator of the privacy wrapper (``"dyadic"``, ``"honaker"``).
        clip: Reward range of every private mechanism (default: the problem's bounds,
            which Gaussian noise leaves unbounded: private policies then refuse to run).
            ``PrivateRewards`` clips to it; a policy that privatises its own rewards
            (``Requirements.bounded_rewards``) sees them through ``ClipRewards``.
        graph_p: Edge probability of an ``erdos_renyi`` graph (default ``2 log(n) / n``).
        link_costs: ``(c1, c2)``, cost of a server-agent and of an agent-agent link.
        components: Sizes of separate components (Li & Song's hybrid structure), each a
            ``graph`` of that size; they must add up to ``n_agents``. ``None``: one
            connected ``graph``.
        instances: ``"fixed"``: every trial plays the one instance of ``seed`` (the
            papers' setting); ``"train"`` or ``"held_out"``: every trial draws its own
            instance of the ``instance`` generator from its env seed, from the train or
            the held-out instance seeds (disjoint; see
            :mod:`fedbandit_env.problems.distribution`).
        setting: An information setting (:data:`~fedbandit_env.settings.SETTINGS`) that
            every policy's env is built through, so that all see the same information;
            ``None``: each policy gets the env it asks for.
        epsilon: The privacy level of a ``+private`` setting.
        dim: Dimension ``d`` of a linear instance (0 for the multi-armed ones).
        heterogeneity: Spread of the agents' ``theta_i`` around ``theta`` (linear).
        loss: Probability that the network loses a delivered peer message
            (:class:`~fedbandit_env.wrappers.MessageLoss`); runs take the PettingZoo path.
        delay: Steps every peer message arrives late
            (:class:`~fedbandit_env.wrappers.MessageDelay`); the PettingZoo path too.
        byzantine: The last ``byzantine`` agents lie
            (:class:`~fedbandit_env.wrappers.Byzantine` with behaviour ``attack``).
        crash: Probability an agent crashes at a step, ``recover`` that a crashed one
            comes back (:class:`~fedbandit_env.wrappers.AgentCrash`).
        privacy_noise: Where ``PrivateRewards``' noise comes from
            (:data:`~fedbandit_env.privacy.Noise`): ``"seeded"`` (replayable from the
            run's seed, which must then stay secret) or ``"secure"`` (fresh OS entropy:
            runs do not replay, and take the PettingZoo path, which is where the policies
            that privatise what they send take ``noise="secure"`` too).

    Examples:
        >>> s = Scenario(n_agents=4, n_arms=3, horizon=50)
        >>> env = s.make_env()
        >>> env.n_agents, env.horizon, s.network().n_edges
        (4, 50, 6)
        >>> private = s.make_env(Requirements(message_dim=6, public_dim=3, epsilon=1.0))
        >>> type(private).__name__, private.unwrapped.protocol
        ('PrivateRewards', RandomEdgeGossip(public_dim=3))
    """

    n_agents: int = 10
    n_arms: int = 5
    instance: str = "biased"
    conflict_fraction: float = 0.5
    gap: float = 0.1
    noise: NoiseKind = "bernoulli"
    sigma: float = 1.0
    graph: str = "complete"
    horizon: int = 20000
    seed: int = 0
    protocol: str = "random_edge_gossip"
    estimator: str = "dyadic"
    clip: tuple[float, float] | None = None
    graph_p: float | None = None
    link_costs: tuple[float, float] = (25.0, 1.0)
    components: tuple[int, ...] | None = None
    instances: str = "fixed"
    setting: str | None = None
    epsilon: float | None = None
    dim: int = 0
    heterogeneity: float = 0.0
    loss: float = 0.0
    delay: int = 0
    byzantine: int = 0
    attack: str = "boost"
    crash: float = 0.0
    recover: float = 0.0
    privacy_noise: str = "seeded"

    @property
    def faults(self) -> bool:
        """Whether the network has faults (no fast path models them yet)."""
        return has_faults(self._fault_fields())

    def _fault_fields(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in FAULT_DEFAULTS}

    @property
    def linear(self) -> bool:
        """Whether this is a linear contextual scenario (``federated_linear_v0``)."""
        return instance_spec(self.instance).linear

    def __post_init__(self) -> None:
        for name, value in check_scenario(self).items():  # one validation, both paths
            object.__setattr__(self, name, value)

    def problem(self) -> Any:
        """Build the (seeded) reward model of the :attr:`instance` kind
        (:mod:`~fedbandit_env.scenario.instances`): a ``MABProblem``, or a
        ``LinearProblem`` for a linear kind."""
        return instance_spec(self.instance).fixed(self, self.seed)

    def _linear(self, seed: Any) -> LinearProblem:
        """A linear kind's instance for ``seed`` (an int, or the env's generator)."""
        problem: LinearProblem = instance_spec(self.instance).fixed(self, seed)
        return problem

    def distribution(self) -> ProblemDistribution:
        """The ``instance`` generator as a distribution (a fresh instance per seed).
        Built once per scenario: the fast path asks for it at every trial.

        Examples:
            >>> Scenario(n_agents=3, n_arms=2, instance="zhu").distribution().name
            'zhu(N=3,M=2)'

        Raises:
            ValueError: For a linear scenario (its instances: :meth:`problem_for`).
        """
        if self.linear:
            raise ValueError(
                "a linear scenario has no ProblemDistribution of MAB problems; its drawn "
                "instances come from problem_for(env_seed), as the linear env draws them"
            )
        return drawn(self)

    @property
    def distribution_name(self) -> str:
        """The name of the instances this scenario draws from (linear ones included).

        Examples:
            >>> Scenario(n_agents=3, n_arms=9, instance="dubey", dim=3).distribution_name
            'dubey(N=3,d=3,K=9)'
        """
        if self.linear:
            return f"{self.instance}(N={self.n_agents},d={self.dim},K={self.n_arms})"
        return self.distribution().name

    def problem_for(self, env_seed: int) -> Any:
        """The instance a trial with ``env_seed`` plays: :meth:`problem` for fixed
        instances, else the env's own draw at ``reset(seed=env_seed)``.

        Examples:
            >>> s = Scenario(n_agents=3, n_arms=3, instances="held_out")
            >>> a, b = s.problem_for(1), s.problem_for(2)
            >>> bool((a.local_means != b.local_means).any())
            True
        """
        if self.instances == "fixed":
            return self.problem()
        if self.linear:  # as FederatedLinearEnv draws it from its sampler
            return self._linear(np.random.default_rng(instance_seed(env_seed, self.instances)))
        return self.distribution().sample(instance_seed(env_seed, self.instances))

    def network(self) -> Network:
        """The (seeded) communication graph: built once per graph (kind, size, seed,
        components, ``p``) in a process, so that its consensus facts (eigenvalues,
        ``lambda_2``: cached properties of the immutable :class:`Network`) are computed
        once per network, not once per trial.

        Examples:
            >>> s = Scenario(n_agents=4, graph="ring")
            >>> s.network() is Scenario(n_agents=4, graph="ring", horizon=7).network()
            True
        """
        parts = tuple(self.components) if self.components is not None else None
        return _network(self.graph, self.n_agents, self.seed, parts, self.graph_p)

    def linear_arguments(self, needs: Requirements | None = None) -> dict[str, Any]:
        """The arguments both linear envs (``FederatedLinearEnv``, and
        ``FederatedLinearVecEnv`` through ``make_vec``) are built with for a policy with
        ``needs``: the instance (or the sampler of drawn ones), network, protocol,
        horizon, link costs, and messages of the policy's header plus one ``(d + 1) x
        (d + 1)`` statistic (none without messages); the split is the caller's.

        Examples:
            >>> s = Scenario(n_agents=3, horizon=5, instance="dubey", dim=2, setting="sync")
            >>> s.linear_arguments(Requirements(message_dim=2))["message_dim"]
            11
        """
        protocol = self.protocol_for(needs)
        needs = self._merged(needs)
        statistic = (self.dim + 1) ** 2
        return {
            "problem": self.problem() if self.instances == "fixed" else self._linear,
            "network": self.network(),
            "protocol": protocol,
            "horizon": self.horizon,
            "message_dim": needs.message_dim + statistic if needs.message_dim else 0,
            "link_costs": self.link_costs,
        }

    def make_env(
        self, needs: Requirements | None = None, **kwargs: Any
    ) -> ParallelEnv[Any, Any, Any]:
        """Build the env (and wrapper stack) that a policy with ``needs`` runs on.

        Messages of ``needs.message_dim`` go through ``needs.protocol`` if the policy
        names one, else :attr:`protocol` (with the public prefix it asks for);
        ``needs.epsilon`` wraps the env in ``PrivateRewards`` (directly: its noise is the
        wrapper stream of depth 0), ``needs.bounded_rewards`` with a :attr:`clip` range
        in ``ClipRewards``.
        """
        plan = self.plan(needs)
        fixed = self.instances == "fixed"
        if not fixed:
            kwargs = {"split": self.instances, **kwargs}
        if self.linear:
            linear = FederatedLinearEnv(**self.linear_arguments(needs), **kwargs)
            return plan.build(linear)
        protocol = self.protocol_for(needs)
        needs = self._merged(needs)
        env: ParallelEnv[Any, Any, Any] = FederatedMABEnv(
            self.problem() if fixed else self.distribution(),
            self.network(),
            protocol,
            horizon=self.horizon,
            message_dim=needs.message_dim,
            link_costs=self.link_costs,
            **kwargs,
        )
        return plan.build(env)

    def protocol_for(self, needs: Requirements | None = None) -> Protocol | None:
        """The protocol a policy with ``needs`` talks through (``None``: it sends
        nothing): the one it names, else :attr:`protocol`, with the public prefix, the
        participation and the hops it asks for. :meth:`make_env` and
        :func:`~fedbandit_env.vector.make_vec` both build it here.

        Examples:
            >>> Scenario(setting="gossip").protocol_for(Requirements(message_dim=4, public_dim=2))
            RandomEdgeGossip(public_dim=2)
        """
        merged = self._merged(needs)
        if not merged.message_dim:
            return None
        kind = merged.protocol or self.protocol
        return make_protocol(kind, merged.public_dim, merged.participation, merged.gamma)

    def _merged(self, needs: Requirements | None) -> Requirements:
        """``needs`` with the setting's requirements (what everyone may know)."""
        needs = needs or Requirements()
        if self.setting is not None:
            needs = get_setting(self.setting).requirements(needs, self.epsilon)
        return needs

    def plan(self, needs: Requirements | None = None) -> StackPlan:
        """The layers :meth:`make_env` puts over the env of a policy with ``needs``
        (:mod:`~fedbandit_env.scenario.plan`): ``PrivateRewards`` (``needs.epsilon``;
        directly on the env) or ``ClipRewards`` (``needs.bounded_rewards`` with a
        :attr:`clip` range), then the network's faults where the env carries messages.
        The fast runners take their streams from the same plan.

        Examples:
            >>> s = Scenario(n_agents=3, n_arms=2, horizon=10, loss=0.1)
            >>> s.plan(Requirements(message_dim=4, epsilon=1.0)).names
            ('PrivateRewards', 'MessageLoss')
        """
        needs = self._merged(needs)
        layers: list[Layer] = []
        if needs.epsilon is not None and not self.linear:
            eps, clip, noise = needs.epsilon, self.clip, self.privacy_noise
            estimator: Any = self.estimator

            def private(env: ParallelEnv[Any, Any, Any]) -> ParallelEnv[Any, Any, Any]:
                return PrivateRewards(env, eps, estimator, clip, noise=noise)  # type: ignore[arg-type]

            def private_vector(venv: Any) -> Any:
                return vector_form(PrivateRewards)(venv, eps, estimator, clip, noise=noise)

            secure = noise == "secure"
            layer = Layer("PrivateRewards", private, True, "privatise", "", secure, private_vector)
            layers.append(layer)
        elif needs.bounded_rewards and self.clip is not None and not self.linear:
            lo, hi = self.clip

            def clip_vector(venv: Any) -> Any:
                return vector_form(ClipRewards)(venv, lo, hi)

            def clip_env(env: ParallelEnv[Any, Any, Any]) -> ParallelEnv[Any, Any, Any]:
                return ClipRewards(env, lo, hi)

            layers.append(Layer("ClipRewards", clip_env, False, "clip", vector=clip_vector))
        if needs.message_dim and has_faults(self._fault_fields()):
            layers += fault_layers(self._fault_fields())
        return StackPlan(tuple(layers))

    @property
    def label(self) -> str:
        """A name for results rows: the instance kind, the shape, the graph, the horizon,
        and a hash of every field, so that two scenarios that differ anywhere (a gap, a
        fault, the seed) never share a label and equal ones always do.

        Examples:
            >>> Scenario(n_agents=3, n_arms=2, horizon=10).label  # doctest: +ELLIPSIS
            'biased N=3 M=2 complete T=10 #...'
            >>> Scenario(horizon=10).label == Scenario(horizon=10).label
            True
        """
        import hashlib
        import json

        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()
        kind = self.instance if self.instances == "fixed" else f"{self.instance}/{self.instances}"
        shape = f"N={self.n_agents} " + (f"d={self.dim} K=" if self.linear else "M=")
        return f"{kind} {shape}{self.n_arms} {self.graph} T={self.horizon} #{digest[:6]}"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON). ``instances``, ``setting``, ``epsilon``, ``dim`` and
        ``heterogeneity`` appear only when they are not their defaults, so the keys of
        sweep runs stored before they existed still match (resume)."""
        out = asdict(self)
        defaults = (
            ("instances", "fixed"),
            ("setting", None),
            ("epsilon", None),
            ("dim", 0),
            ("heterogeneity", 0.0),
            ("privacy_noise", "seeded"),
            *FAULT_DEFAULTS.items(),
        )
        for name, default in defaults:
            if out[name] == default:
                del out[name]
        return out
