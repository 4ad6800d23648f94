"""The options every ``fedbandit`` subcommand that runs policies shares, and their parsing.

``bench`` and ``sweep`` describe a setting with the same options
(:func:`add_setting_options`), read the same TOML config files (:func:`config_args`),
and turn the options into a :class:`~fedbandit_env.scenario.scenario.Scenario`
(:func:`scenario_from_args`) and into each policy's constructor arguments
(:func:`policy_kwargs`, through the policy's registered options entry point).

Examples:
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_setting_options(p, out=Path("r"))
    >>> args = p.parse_args(["--agents", "4", "--graph", "ring"])
    >>> scenario_from_args(args).n_agents, scenario_from_args(args).graph
    (4, 'ring')
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env import registry
from fedbandit_env.network.graph import GRAPH_KINDS
from fedbandit_env.problems.mab import NOISE_KINDS
from fedbandit_env.protocols import PROTOCOL_ALIASES, PROTOCOLS
from fedbandit_env.registry import model_label
from fedbandit_env.runner.evaluate import is_model
from fedbandit_env.scenario.checks import INSTANCE_SPLITS
from fedbandit_env.scenario.faults import FAULT_DEFAULTS, FAULTS
from fedbandit_env.scenario.instances import instance_names
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.settings import SETTINGS


def default_policies(linear: bool = False) -> list[str]:
    """The policies ``fedbandit bench`` runs when no ``--policies`` are given: those
    registered with the tag ``default`` (:data:`fedbandit_env.registry.TAGS`) that play
    the scenario's bandit, in registration order.

    Examples:
        >>> default_policies()[:3], default_policies(linear=True)[-1]
        (['gossip_ucb', 'fed_ucb', 'cdp_mab'], 'pooled_lin_ucb')
    """
    return registry.tagged("default", "linear" if linear else "mab")


def add_setting_options(parser: argparse.ArgumentParser, out: Path) -> None:
    """The options that describe a setting and its runs (shared by bench and sweep).

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_setting_options(p, out=Path("r"))
        >>> p.parse_args(["--graph", "ring"]).graph
        'ring'
    """
    b = parser
    d = Scenario()
    b.add_argument(
        "--policies",
        default=None,
        help="comma-separated policy ids (see `fedbandit list`), saved models as "
        "ppo:path.zip (a2c:, dqn:, recurrent_ppo:; a folder fedbandit train wrote names its "
        "model.zip), or tuned:path.json (a result fedbandit tune saved); default: the "
        "policies registered as bench defaults "
        "(tag 'default' in `fedbandit list`), or with --setting those of them meant for it",
    )
    b.add_argument(
        "--setting",
        choices=sorted(SETTINGS),
        default=None,
        help="information setting every policy runs in (who hears whom, raw or private "
        "rewards; +private uses --epsilon); default: each policy the env it asks for",
    )
    b.add_argument(
        "--import",
        dest="imports",
        action="append",
        type=parse_modules,
        default=[],
        metavar="MODULE[,MODULE]",
        help="import these first: modules (or .py files) that register policies "
        "(fedbandit_env.registry.register) make them available to --policies",
    )
    b.add_argument("--agents", type=int, default=d.n_agents, help="number of agents N")
    b.add_argument(
        "--arms",
        type=int,
        default=None,
        help=f"number of arms M (default {d.n_arms}); with --instance dubey the size K of "
        "every decision set (default d^2, as the paper)",
    )
    b.add_argument(
        "--instance",
        choices=instance_names(),
        default=d.instance,
        help="problem generator (the instance table: the package's kinds and the ones "
        "families register)",
    )
    b.add_argument(
        "--instances",
        choices=INSTANCE_SPLITS,
        default=d.instances,
        help="fixed: every trial plays the one instance of --seed (the papers' setting); "
        "train / held_out: each trial draws its own instance of --instance from its seed, "
        "from the train or the disjoint held-out instance seeds",
    )
    b.add_argument(
        "--held-out",
        dest="instances",
        action="store_const",
        const="held_out",
        help="same as --instances held_out (evaluate on instances no training run used)",
    )
    b.add_argument(
        "--conflict-fraction",
        type=float,
        default=d.conflict_fraction,
        help="share of misled agents (conflicting instance)",
    )
    b.add_argument(
        "--gap", type=float, default=d.gap, help="guaranteed global gap (conflicting instance)"
    )
    b.add_argument(
        "--dim",
        type=int,
        default=0,
        help="dimension d of a linear instance (--instance dubey; default 10); --arms is "
        "then the decision-set size K",
    )
    b.add_argument(
        "--heterogeneity",
        type=float,
        default=0.0,
        help="linear instance: spread of the agents' theta_i around theta (<= 0.2)",
    )
    b.add_argument("--noise", choices=NOISE_KINDS, default=d.noise, help="reward noise")
    b.add_argument("--sigma", type=float, default=d.sigma, help="Gaussian noise scale")
    for fault in FAULTS:  # the network's faults (every fault run takes the PettingZoo path)
        for x in fault.fields:
            kind = {"choices": x.choices} if x.choices else {"type": x.kind}
            b.add_argument(f"--{x.name}", default=x.default, help=x.help, **kind)
    b.add_argument(
        "--clip",
        type=parse_clip,
        default=None,
        help="LOW,HIGH: reward range of every private mechanism (the privacy wrapper and "
        "the policies that privatise what they send clip to it and calibrate their noise to "
        "its width); required for private policies under --noise gaussian (a negative LOW: "
        "--clip=-1,2)",
    )
    b.add_argument(
        "--graph", choices=sorted(GRAPH_KINDS), default=d.graph, help="communication graph"
    )
    b.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        type=renamed("--protocol", PROTOCOL_ALIASES),
        default=d.protocol,
        help="delivery rule for policies that talk",
    )
    b.add_argument(
        "--epsilon",
        type=float,
        default=1.0,
        help="privacy level of every private mechanism: the +private settings', the privacy "
        "wrapper's and the policies that privatise what they send (inf: no privacy)",
    )
    b.add_argument(
        "--privacy-noise",
        choices=("seeded", "secure"),
        default="seeded",
        help="where every private mechanism's noise comes from: seeded (replayable from "
        "--seed, so private only while the seed stays secret) or secure (fresh OS entropy, "
        "not recorded; runs do not replay: vector policies draw it on the vector env, the "
        "others take the PettingZoo path, never the compiled loops)",
    )
    b.add_argument(
        "--components",
        type=parse_components,
        default=None,
        help="hybrid topology: component sizes, e.g. 20,20,20,20,20 or 20x5 (five of 20) "
        "or 1x100; each is a --graph; sets --agents to their sum",
    )
    b.add_argument(
        "--estimator",
        choices=("dyadic", "honaker"),
        default=d.estimator,
        help="tree estimator of the privacy wrapper",
    )
    b.add_argument("--c1", type=float, default=d.link_costs[0], help="cost of a server link")
    b.add_argument("--c2", type=float, default=d.link_costs[1], help="cost of a peer link")
    b.add_argument("--horizon", type=int, default=d.horizon, help="steps T")
    b.add_argument("--trials", type=int, default=20, help="independent runs per policy")
    b.add_argument("--seed", type=int, default=0, help="seed of instance, graph and runs")
    b.add_argument(
        "--record-every", type=int, default=0, help="record regret every k steps (0: horizon / 100)"
    )
    b.add_argument(
        "--out", type=Path, default=out, help="output folder (table, plots, CSV, config)"
    )
    b.add_argument("--no-plot", action="store_true", help="skip the PNGs")
    b.add_argument("--no-progress", action="store_true", help="hide progress bars")
    b.add_argument(
        "--config",
        type=Path,
        default=None,
        help="TOML file of options (same names); options given on the command line win",
    )
    add_policy_options(b)


def add_policy_options(parser: argparse.ArgumentParser) -> None:
    """A flag for every option the registered policies declare
    (:func:`~fedbandit_env.registry.declared_options`), with the ids that read it in its
    help.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_policy_options(p)
        >>> p.parse_args(["--participation", "0.5"]).participation
        0.5
    """
    group = parser.add_argument_group("options the registered policies declare")
    for option, ids in registry.declared_options().values():
        group.add_argument(  # ranges: checked before a run (cli.applies.preflight)
            option.flag,
            dest=option.name,
            type=option.type,
            default=option.default,
            choices=option.choices,
            help=f"{option.help} ({', '.join(ids)})",
        )


def renamed(option: str, aliases: dict[str, str]) -> Callable[[str], str]:
    """An argparse ``type`` for ``option`` that reads a former name (a key of
    ``aliases``) as its new one, with a line on stderr saying so.

    Examples:
        >>> from fedbandit_env.protocols import PROTOCOL_ALIASES
        >>> read = renamed("--protocol", PROTOCOL_ALIASES)
        >>> read("server")
        'server'
        >>> read("local")  # prints the renaming on stderr
        'gamma_hops'
    """

    def read(text: str) -> str:
        if text in aliases:
            print(f"fedbandit: {option} {text} is now called {aliases[text]}", file=sys.stderr)
            return aliases[text]
        return text

    return read


def parse_clip(text: str) -> tuple[float, float]:
    """A clip range from ``"LOW,HIGH"`` (finite, ``LOW < HIGH``).

    Examples:
        >>> parse_clip("-1,2.5")
        (-1.0, 2.5)
    """
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"clip must look like 0,1 (LOW,HIGH), got {text!r}"
        ) from err
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise argparse.ArgumentTypeError(f"clip needs finite LOW < HIGH, got {text!r}")
    return lo, hi


def parse_count(text: str) -> int:
    """An argparse type: a whole number >= 1, written as an int or in float notation
    (``1e6``); infinity, NaN, fractions and numbers below 1 are refused in one line.

    Examples:
        >>> parse_count("1e6"), parse_count("24")
        (1000000, 24)
        >>> parse_count("inf")
        Traceback (most recent call last):
        argparse.ArgumentTypeError: expected a whole number >= 1, got 'inf'
    """
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value) or value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(value)


def parse_components(text: str) -> tuple[int, ...]:
    """Component sizes from ``"20,20,10"``, with ``"SIZExCOUNT"`` shorthand.

    Examples:
        >>> parse_components("20x2,10"), parse_components("1x3")
        ((20, 20, 10), (1, 1, 1))
    """
    sizes: list[int] = []
    try:
        for token in text.split(","):
            size, _, count = token.strip().partition("x")
            sizes += [int(size)] * (int(count) if count else 1)
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"components must look like 20,20,10 or 20x5, got {text!r}"
        ) from err
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"component sizes must be >= 1, got {text!r}")
    return tuple(sizes)


def policy_kwargs(pid: str, args: argparse.Namespace, problem: Any) -> dict[str, Any]:
    """The constructor options ``fedbandit bench`` passes to policy ``pid``: what its
    registered options entry point makes of the setting options (none without one).

    Examples:
        >>> from fedbandit_env.cli import build_parser
        >>> args = build_parser().parse_args(["bench", "--rounds", "3", "--epsilon", "inf",
        ...                                   "--min-gap", "0.05"])
        >>> policy_kwargs("ddp_mab", args, scenario_from_args(args).problem())
        {'epsilon': None, 'rounds': 3, 'min_gap': 0.05}
    """
    return registry.spec(pid).options(vars(args), problem)


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The :class:`Scenario` that ``fedbandit bench`` options describe.

    Examples:
        >>> from fedbandit_env.cli import build_parser
        >>> args = build_parser().parse_args(["bench", "--components", "2x3", "--graph", "star"])
        >>> s = scenario_from_args(args)
        >>> s.n_agents, s.components, s.graph
        (6, (2, 2, 2), 'star')
    """
    components = args.components
    if args.instance is None:  # bench's "the saved models' kind, else the default"
        args.instance = Scenario.instance
    linear = args.instance in instance_names(linear=True)
    dim = (args.dim or 10) if linear else args.dim
    arms = args.arms if args.arms is not None else (dim * dim if linear else Scenario.n_arms)
    return Scenario(
        n_agents=sum(components) if components else args.agents,
        n_arms=arms,
        instance=args.instance,
        conflict_fraction=args.conflict_fraction,
        gap=args.gap,
        noise=args.noise,
        sigma=args.sigma,
        graph=args.graph,
        horizon=args.horizon,
        seed=args.seed,
        protocol=args.protocol,
        estimator=args.estimator,
        clip=args.clip,
        link_costs=(args.c1, args.c2),
        components=components,
        instances=args.instances,
        setting=args.setting,
        epsilon=args.epsilon if args.setting and SETTINGS[args.setting].private else None,
        dim=dim,
        heterogeneity=args.heterogeneity,
        privacy_noise=args.privacy_noise,
        **{k: getattr(args, k) for k in FAULT_DEFAULTS},
    )


def parse_modules(text: str) -> list[str]:
    """Module names from a comma list (the ``--import`` option).

    Examples:
        >>> parse_modules("my_policies, lab.extra")
        ['my_policies', 'lab.extra']
    """
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected module names, got {text!r}")
    return names


def import_modules(groups: list[list[str]]) -> tuple[str, ...]:
    """Import the ``--import`` modules (they register their policies); returns their
    names, flat, for the sweep's workers to import too.

    Raises:
        ValueError: For a module that cannot be imported, or one that registers a policy
            under an id already registered (a built-in: it would silently shadow it).

    Examples:
        >>> import_modules([["json"], ["math"]])
        ('json', 'math')
    """
    import warnings

    names = tuple(name for group in groups for name in group)
    builtin = {pid: registry.spec(pid) for pid in registry.policy_ids()}  # plugins first
    for name in names:
        with warnings.catch_warnings():  # the refusal below says it, in one line
            warnings.filterwarnings("ignore", "overriding policy", UserWarning)
            try:
                registry.import_plugin(name)
            except ValueError as err:
                raise ValueError(f"--import {name}: {err}") from err
        shadowed = sorted(pid for pid, spec in builtin.items() if registry.spec(pid) != spec)
        if shadowed:
            raise ValueError(
                f"--import {name} registers {shadowed}, the id(s) of policies already "
                "registered: register yours under another id"
            )
    return names


def parse_policies(
    text: str | None,
    setting: str | None = None,
    linear: bool = False,
    instance: str | None = None,
) -> list[str]:
    """Policy ids (and saved models ``ppo:path.zip``) from a comma list, checked; with
    no list, the default policies (those meant for ``setting`` when there is one, and
    for the ``instance`` kind; the linear family's for a ``linear`` instance).

    Examples:
        >>> parse_policies("gossip_ucb, ppo:m.zip")
        ['gossip_ucb', 'ppo:m.zip']
        >>> parse_policies(None, "local")
        ['local_ucb', 'kl_ucb', 'local_ts', 'oracle_ucb', 'random']
        >>> parse_policies("ppo:a/model.zip,ppo:b/model.zip")  # labelled by their folders
        ['ppo:a/model.zip', 'ppo:b/model.zip']
    """
    if text is None:
        ids = default_policies(linear)
        if instance is not None:
            ids = [p for p in ids if registry.spec(p).meant_for(instance)]
        if setting is None:
            return ids
        return [p for p in ids if registry.spec(p).runs_in(setting)]
    known = registry.policy_ids()
    ids = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in ids if p not in known and not is_model(p)]
    if not ids or unknown:
        raise ValueError(
            f"--policies must name known ids {known} (registered policies, see "
            f"`fedbandit list`; or saved models ppo:path.zip), got {text!r}"
        )
    if len(set(ids)) != len(ids):
        raise ValueError(f"--policies lists a policy twice: {text!r}")
    labels = [model_label(p) if is_model(p) else p for p in ids]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        same = [p for p, label in zip(ids, labels, strict=True) if label in twice]
        raise ValueError(
            f"--policies: {', '.join(same)} would share the label(s) {twice} in results "
            "(a model is labelled by its file's name, or its folder's for model.zip); "
            "rename a file or a folder"
        )
    return ids


__all__ = [
    "add_setting_options",
    "default_policies",
    "import_modules",
    "parse_clip",
    "parse_components",
    "parse_count",
    "parse_policies",
    "policy_kwargs",
    "scenario_from_args",
]
