"""The reference policies' entries in the core registry (:mod:`fedbandit_env.registry`).

:func:`register_policies` is named in ``pyproject.toml`` under the entry point group
``fedbandit_env.policies``, so the registry loads it on its first lookup; the core
package never imports ``baselines``. Every entry point is a ``"module:attr"`` string:
registering imports nothing, a policy's module is imported when it is first made.

``settings`` names the information settings (:mod:`fedbandit_env.settings`) a policy
is meant for; local UCB1 and random run in any. The oracle is ``privileged``: it pools
every agent's raw rewards, outside any setting: every table's pooled reference (not an
upper bound: cooperative Thompson sampling beats its UCB index).

Adding a family: a folder ``baselines/<family>/`` (policies, compiled mathematics,
batched trial loop) and its ``register`` calls here. ``tags`` tell the core its roles
(:data:`fedbandit_env.registry.TAGS`): ``default`` (``fedbandit bench`` runs it, in
registration order), ``floor`` / ``pooled`` (every table's random floor and pooled
oracle), ``local`` (the no-communication reference), ``speed`` (measured by ``fedbandit
speed``), ``strongest`` (measured so by the yardstick, docs/yardstick.md).

The linear family (Dubey & Pentland) runs on linear scenarios only (``--instance
dubey``); ``fedlin_ucb_dp`` is FedUCB *as published* and is **not private** (its
adaptive schedule leaks, Zhou & Chowdhury 2024): its privacy spent is reported as
``inf``; ``private_fedlin_ucb`` is the corrected private variant.

Examples:
    >>> from fedbandit_env import registry
    >>> register_policies()
    >>> [p for p in registry.policy_ids() if registry.spec(p).family == "elimination"]
    ['cdp_mab', 'ddp_mab', 'fed1_ucb', 'hdp_mab']
    >>> registry.make("local_ucb").name
    'local_ucb'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env.problems import MABProblem
from fedbandit_env.registry import PolicyOption, register
from fedbandit_env.scenario.instances import InstanceSpec, register_instance

ROUNDS = PolicyOption(
    "rounds", int, 0, "at most R communication rounds, Delta_r = Delta^(r/R) (0: unlimited)", low=0
)
MIN_GAP = PolicyOption(
    "min_gap",
    float,
    None,
    "with --rounds: the smallest gap Delta (default: the instance's)",
    low=0.0,
    high=1.0,
    low_open=True,
)
PERIOD = PolicyOption(
    "period", int, 1, "steps between a server index's uploads (1: a round every step)", low=1
)
KAPPA = PolicyOption(
    "kappa", float, 10.0, "f(p) = floor(kappa log T) pulls of each arm a phase", low=0.0,
    low_open=True,
)  # fmt: skip
WIDTH_C = PolicyOption(
    "c", float, 4.0, "elimination width sqrt(c sigma^2 log T / (K n))", low=0.0, low_open=True
)
PARTICIPATION = PolicyOption(
    "participation",
    float,
    1.0,
    "share p of agents uploading per round (ceil(p N) uploaders)",
    low=0.0,
    high=1.0,
    low_open=True,
)


def dducb_instance(scenario: Any, seed: Any) -> MABProblem:
    """Martinez-Rubio, Kanade and Rebeschini's instance (NeurIPS 2019, Sec. 5): every
    agent sees the same arms, the first of mean 1.0 and the others 0.8, with Gaussian
    noise of the scenario's ``sigma`` (the paper: 1; ``noise`` must be ``gaussian``).

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> p = Scenario(n_agents=2, n_arms=3, instance="dducb", noise="gaussian").problem()
        >>> p.local_means.tolist(), p.sigma
        ([[1.0, 0.8, 0.8], [1.0, 0.8, 0.8]], 1.0)
    """
    means = np.full((scenario.n_agents, scenario.n_arms), 0.8)
    means[:, 0] = 1.0
    return MABProblem(means, noise=scenario.noise, sigma=scenario.sigma)


def _gaussian_only(scenario: Any) -> dict[str, Any]:
    if scenario.noise != "gaussian":
        raise ValueError(
            f"the dducb instance has Gaussian rewards: --noise gaussian, not {scenario.noise!r}"
        )
    return {}


def register_policies() -> None:
    """Register every reference policy, the instance kinds the families bring, and the
    papers ``fedbandit reproduce`` measures (:func:`baselines.papers.register_papers`;
    idempotent)."""
    from baselines.papers import register_papers

    register_papers()
    register_instance(
        InstanceSpec(
            "dducb",
            dducb_instance,
            check=_gaussian_only,
            description="DDUCB's instance: arm 0 at 1.0, the rest 0.8, for every agent",
        )
    )
    register(
        "gossip_ucb",
        "baselines.gossip:GossipUCB",
        description="Zhu et al. 2021, Alg. 1: UCB on gossiped means and counts",
        family="gossip",
        fast_entry_point="baselines.gossip.fast:run_gossip_ucb",
        settings=("gossip", "neighbours", "gossip+private", "neighbours+private"),
        tags=("default", "speed"),
    )
    register(
        "robust_gossip_ucb",
        "baselines.gossip:RobustGossipUCB",
        description="Gossip_UCB with trimmed-mean gossip and a trimmed count max (ours)",
        family="gossip",
        kwargs={"trim": 1},
        settings=("neighbours", "gossip"),
    )
    register(
        "fed_ucb",
        "baselines.gossip:FedUCB",
        description="Zhu et al. 2021, Alg. 4: Gossip_UCB under the tree mechanism",
        family="gossip",
        kwargs={"epsilon": 1.0},
        fast_entry_point="baselines.gossip.fast:run_fed_ucb",
        options_entry_point="baselines.gossip:fed_ucb_options",
        settings=("gossip+private", "neighbours+private"),
        tags=("default", "speed"),
    )
    for pid, entry, fast, what, setting in (
        ("cdp_mab", "baselines.elimination:CDPMAB", "baselines.elimination.fast:run_cdp_mab",
         "master-worker rounds with partial participation", "server"),
        ("ddp_mab", "baselines.elimination:DDPMAB", "baselines.elimination.fast:run_ddp_mab",
         "decentralized GIS flooding", "flooding"),
        ("hdp_mab", "baselines.elimination:HDPMAB", "baselines.elimination.fast:run_hdp_mab",
         "hybrid: components with sinks", "hybrid"),
    ):  # fmt: skip
        register(
            pid,
            entry,
            description=f"Li & Song, private arm elimination: {what}",
            family="elimination",
            fast_entry_point=fast,
            options_entry_point=(
                "baselines.elimination:cdp_mab_options"
                if pid == "cdp_mab"
                else "baselines.elimination:elimination_options"
            ),
            settings=(setting,),  # they privatise what they send themselves
            tags=("default",),
            cli_options=(PARTICIPATION, ROUNDS, MIN_GAP) if pid == "cdp_mab" else (ROUNDS, MIN_GAP),
        )
    coop = ("neighbours", "gossip")
    register(
        "coop_ts",
        "baselines.thompson:CooperativeTS",
        description="cooperative Thompson sampling: share counts and sums, average what is held",
        family="thompson",
        kwargs={"share": "hold"},
        fast_entry_point="baselines.thompson.fast:run_coop_ts",
        settings=coop,
        tags=("default", "speed"),  # beaten by tuned_ts in both (docs/yardstick.md)
    )
    register(
        "coop_ts_relay",
        "baselines.thompson:CooperativeTS",
        description="cooperative Thompson sampling relaying every agent's row with its stamp",
        family="thompson",
        kwargs={"share": "relay"},
        fast_entry_point="baselines.thompson.fast:run_coop_ts",
        settings=coop,
        tags=("strongest",),
    )
    register(
        "private_coop_ts",
        "baselines.thompson:PrivateCooperativeTS",
        description="cooperative Thompson sampling on private rewards (tree noise in posterior)",
        family="thompson",
        kwargs={"share": "hold", "epsilon": 1.0},
        fast_entry_point="baselines.thompson.fast:run_coop_ts",
        options_entry_point="baselines.thompson:private_ts_options",
        settings=("neighbours+private", "gossip+private"),
        tags=("default", "strongest"),
    )
    register(
        "index_ts",
        "baselines.index:IndexPolicy",
        description="tunable index on the averaged local means (TS/UCB forms; fedbandit tune)",
        family="index",
        settings=coop,
        tags=("tunable",),
    )
    register(
        "index_private_ts",
        "baselines.index:IndexPolicy",
        description="tunable index on private rewards (tree noise in its variance)",
        family="index",
        kwargs={"epsilon": 1.0},
        options_entry_point="baselines.thompson:private_ts_options",
        settings=("neighbours+private", "gossip+private"),
        tags=("tunable",),
    )
    register(
        "tuned_ts",
        "baselines.index:tuned_ts",
        description="index_ts tuned on train instances (fedbandit tune --setting neighbours)",
        family="index",
        settings=coop,
        tags=("default", "strongest"),
    )
    register(
        "tuned_private_ts",
        "baselines.index:tuned_private_ts",
        description="index_private_ts tuned on train instances (gossip+private, epsilon 1)",
        family="index",
        options_entry_point="baselines.thompson:private_ts_options",
        settings=("neighbours+private", "gossip+private"),
        tags=("default", "strongest"),
    )
    rounds = ("server", "flooding", "hybrid")
    register(
        "server_ts",
        "baselines.index.server:server_ts",
        description="Thompson sampling on the server's average of local posteriors (rounds)",
        family="index",
        settings=rounds,
        tags=("default", "strongest", "tunable"),
        cli_options=(PERIOD,),
    )
    register(
        "private_server_ts",
        "baselines.index.server:server_ts",
        description="server_ts on private rewards (tree noise in its variance)",
        family="index",
        kwargs={"epsilon": 1.0},
        options_entry_point="baselines.index:private_server_options",
        settings=tuple(f"{r}+private" for r in rounds),
        tags=("strongest", "tunable"),
        cli_options=(PERIOD,),
    )
    register(
        "epoch_private_ts",
        "baselines.index.epoch:EpochIndexPolicy",
        description="index_ts on epoch-private releases: doubling epochs, fresh Laplace "
        "noise each (its own epsilon-DP mechanism, additive cost)",
        family="index",
        options_entry_point="baselines.index.epoch:epoch_options",
        settings=coop,  # it privatises what it sends itself
    )
    register(
        "epoch_private_server_ts",
        "baselines.index.epoch:EpochServerPolicy",
        description="server_ts on epoch-private releases (its own epsilon-DP mechanism)",
        family="index",
        options_entry_point="baselines.index.epoch:epoch_server_options",
        settings=rounds,
        cli_options=(PERIOD,),
    )
    register(
        "fed1_ucb",
        "baselines.elimination.fed1_ucb:fed1_ucb",
        description="Shi & Shen 2021, Fed1-UCB (exact model): phased elimination on the "
        "server's average of local means",
        family="elimination",
        settings=rounds,
        cli_options=(KAPPA, WIDTH_C),
    )
    consensus: tuple[tuple[str, str, dict[str, object], tuple[str, ...]], ...] = (
        (
            "dducb",
            "Martinez-Rubio et al. 2019: delayed UCB, the authors' best (plain rounds, C_small)",
            {"accelerated": False, "stage": "accelerated", "code_alias": True},
            ("default", "speed"),
        ),
        (
            "dducb_accelerated",
            "DDUCB as the paper states it: Chebyshev-accelerated consensus rounds",
            {"accelerated": True},
            (),
        ),
        ("dducb_plain", "DDUCB with plain consensus rounds (its C)", {"accelerated": False}, ()),
    )
    for pid, what, kwargs, tags in consensus:
        register(
            pid,
            "baselines.consensus:DDUCB",
            description=what,
            family="consensus",
            kwargs=kwargs,
            fast_entry_point="baselines.consensus.fast:run_dducb",
            settings=("neighbours",),  # every neighbour every step; homogeneous agents
            tags=tags,
        )
    register(
        "coop_ucb2",
        "baselines.consensus:CoopUCB2",
        description="Landgren et al. 2016: UCB on running consensus of counts and sums",
        family="consensus",
        fast_entry_point="baselines.consensus.fast:run_coop_ucb2",
        settings=("neighbours",),
        tags=("default",),
    )
    models = Path(__file__).with_name("learned") / "models"
    learned_models = (
        ("learned_neighbours", "neighbours", "every neighbour every step"),
        ("learned_gossip", "gossip", "one random edge a step"),
        ("learned_private", "gossip+private", "gossip on private rewards, epsilon 1"),
    )
    for pid, setting, where in learned_models:
        if not (models / f"{pid}.npz").is_file():
            continue  # a checkout without the trained weights
        register(
            pid,
            "baselines.learned:learned",
            description=f"posterior net trained by PPO in {setting} ({where}): scores each "
            "arm from the team posterior of counts and sums (fedbandit train --net posterior)",
            family="learned",
            kwargs={"name": pid},
            options_entry_point=(
                "baselines.learned:learned_options" if setting.endswith("+private") else None
            ),
            settings=(setting,),
            tags=("learned", "strongest"),  # measured so: docs/yardstick.md
        )
    register(
        "local_ucb",
        "baselines.ucb.vector:local_ucb",
        description="UCB1 on the agent's own rewards, no communication (Auer et al. 2002)",
        family="ucb",
        fast_entry_point="baselines.ucb.fast:run_local_ucb",
        tags=("default", "local"),
    )
    register(
        "kl_ucb",
        "baselines.ucb.vector:kl_ucb",
        description="KL-UCB on the agent's own rewards, no communication (Garivier & Cappe 2011)",
        family="ucb",
        fast_entry_point="baselines.ucb.fast:run_kl_ucb",
        tags=("default", "local"),
    )
    register(
        "local_ts",
        "baselines.thompson:LocalTS",
        description="Thompson sampling on the agent's own rewards, no communication",
        family="thompson",
        fast_entry_point="baselines.thompson.fast:run_local_ts",
        tags=("default", "local"),
    )
    register(
        "oracle_ucb",
        "baselines.ucb.vector:OracleVector",
        description="centralized UCB1 on every agent's rewards, all pulling one arm",
        family="ucb",
        fast_entry_point="baselines.ucb.fast:run_oracle",
        privileged=True,  # every table's pooled reference: raw rewards of all, no setting
        tags=("default", "pooled"),
    )
    register(
        "random",
        "baselines.ucb.vector:RandomVector",
        description="uniformly random arms",
        family="ucb",
        fast_entry_point="baselines.ucb.fast:run_random",
        tags=("default", "floor"),
    )
    linear: tuple[tuple[str, str, str, str, dict[str, object]], ...] = (
        (
            "lin_ucb",
            "baselines.linear:LinUCB",
            "baselines.linear.fast:run_lin_ucb",
            "OFUL on the agent's own data, no communication",
            {},
        ),
        (
            "fedlin_ucb",
            "baselines.linear:FedLinUCB",
            "baselines.linear.fast:run_fedlin_ucb",
            "Dubey & Pentland, Alg. 1 without PRIVATIZER (adaptive sync; ablation)",
            {"sync": "adaptive"},
        ),
        (
            "fedlin_ucb_fixed",
            "baselines.linear:FedLinUCB",
            "baselines.linear.fast:run_fedlin_ucb_fixed",
            "FedUCB with a fixed sync schedule, no noise (ablation)",
            {"sync": "fixed"},
        ),
        (
            "fedlin_ucb_dp",
            "baselines.linear:FedLinUCB",
            "baselines.linear.fast:run_fedlin_ucb_dp",
            "Dubey & Pentland, Alg. 1 + 2 as published: NOT private (adaptive sync leaks)",
            {"sync": "adaptive", "epsilon": 1.0, "calibration": "published"},
        ),
        (
            "private_fedlin_ucb",
            "baselines.linear:FedLinUCB",
            "baselines.linear.fast:run_private_fedlin_ucb",
            "corrected private FedUCB: fixed schedule, tree over rounds, exact GDP noise",
            {"sync": "fixed", "epsilon": 1.0, "calibration": "gdp"},
        ),
    )
    for pid, entry, fast, what, kwargs in linear:
        register(
            pid,
            entry,
            description=what,
            family="linear",
            kwargs=kwargs,
            fast_entry_point=fast,
            options_entry_point=(
                "baselines.linear:private_options" if "epsilon" in kwargs else None
            ),
            # local LinUCB needs no messages; FedUCB speaks the sync protocol
            settings=("local", "sync") if pid == "lin_ucb" else ("sync",),
            bandit="linear",
            tags=("default", "local") if pid == "lin_ucb" else ("default",),
        )
    register(
        "dec_fedlin_ucb",
        "baselines.linear:DecFedLinUCB",
        description="Dubey & Pentland Sec. 4.2: decentralized, LOCAL with gamma hops, no noise",
        family="linear",
        kwargs={"gamma": 2},
        fast_entry_point="baselines.linear.fast:run_dec_fedlin_ucb",
        settings=(),
        bandit="linear",
    )
    register(
        "private_dec_fedlin_ucb",
        "baselines.linear:DecFedLinUCB",
        description="decentralized private FedUCB: fixed schedule, a GDP tree per estimator",
        family="linear",
        kwargs={"gamma": 2, "sync": "fixed", "epsilon": 1.0, "calibration": "gdp"},
        fast_entry_point="baselines.linear.fast:run_private_dec_fedlin_ucb",
        options_entry_point="baselines.linear:private_options",
        settings=(),
        bandit="linear",
    )
    register(
        "pooled_lin_ucb",
        "baselines.linear:PooledLinUCB",
        description="centralized OFUL on every agent's data (the linear pooled reference)",
        family="linear",
        fast_entry_point="baselines.linear.fast:run_pooled_lin_ucb",
        privileged=True,
        bandit="linear",
        tags=("default", "pooled"),
    )
