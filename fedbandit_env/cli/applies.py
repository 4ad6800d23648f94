"""Warnings for options that change nothing for the chosen policies and scenario.

An option left at its default is never mentioned. One that was set is *inert* when no
chosen policy reads it (``--participation`` with gossip_ucb) or when the scenario makes
it moot (``--sigma`` with Bernoulli rewards, ``--attack`` without ``--byzantine``); the
command then prints one ``fedbandit: warning:`` line for it and runs anyway.

A policy reads an option when its registration
(:meth:`~fedbandit_env.registry.PolicySpec.options`: its options entry point, or the
options it declares) gives it different constructor arguments with and without the
option; that asks the policy itself, so a user's
registered policy is judged like the references.

Examples:
    >>> from fedbandit_env.cli import build_parser
    >>> parser = build_parser()
    >>> args = parser.parse_args(["bench", "--participation", "0.5", "--sigma", "2"])
    >>> for line in inert_options(args, parser, ["gossip_ucb"]):
    ...     print(line)
    --participation 0.5 changes nothing: no chosen policy reads it (gossip_ucb)
    --sigma 2.0 changes nothing: the rewards are bernoulli, not Gaussian
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from fedbandit_env import registry
from fedbandit_env.files import check_writable
from fedbandit_env.runner.evaluate import is_model
from fedbandit_env.scenario.faults import FAULT_QUALIFIERS


def policy_options() -> tuple[str, ...]:
    """Options that only reach a policy through its registration: ``epsilon`` and every
    option a registered policy declares.

    Examples:
        >>> "epsilon" in policy_options() and "participation" in policy_options()
        True
    """
    return ("epsilon", *registry.declared_options())


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _policy_reads(pid: str, dest: str, args: argparse.Namespace, default: Any) -> bool:
    spec = registry.spec(pid)
    with_it = spec.options(vars(args), None)
    without = spec.options({**vars(args), dest: default}, None)
    return bool(with_it != without)


def _draws_noise(policies: Sequence[str], setting: str | None, args: argparse.Namespace) -> bool:
    """Whether the setting privatises rewards or a chosen policy has a mechanism of its
    own (its constructor from the command line's options)."""
    if setting is not None and setting.endswith("+private"):
        return True
    n, m = getattr(args, "agents", 2), getattr(args, "arms", None) or 2
    for pid in policies:
        spec = registry.spec(pid)
        try:
            team = spec.make(**spec.options(vars(args), None))
        except (TypeError, ValueError, AttributeError):
            return True  # an entry point that needs the real problem: assume it may
        if team.noise_source() is not None or team.requirements(n, m).epsilon is not None:
            return True
    return False


def inert_options(
    args: argparse.Namespace, parser: argparse.ArgumentParser, policies: Sequence[str]
) -> list[str]:
    """One line for each option set away from its default that changes nothing."""
    sub = next(
        (
            p
            for a in parser._actions
            if isinstance(a, argparse._SubParsersAction)
            for name, p in a.choices.items()
            if name == getattr(args, "command", None)
        ),
        parser,
    )

    def default(dest: str) -> Any:
        return sub.get_default(dest)

    def changed(dest: str) -> bool:
        return hasattr(args, dest) and getattr(args, dest) != default(dest)

    refs = [p for p in policies if not is_model(p)]
    setting = getattr(args, "setting", None)
    out = []
    for dest in policy_options():
        if not changed(dest):
            continue
        if dest == "epsilon" and setting is not None and setting.endswith("+private"):
            continue
        try:
            used = any(_policy_reads(p, dest, args, default(dest)) for p in refs)
        except (TypeError, ValueError, AttributeError):
            used = True  # an entry point that needs the real problem: assume it reads it
        if not used:
            names = ", ".join(policies)
            out.append(
                f"{_flag(dest)} {getattr(args, dest)} changes nothing: no chosen policy "
                f"reads it ({names})"
            )
    moot = {
        "sigma": (
            args.noise == "bernoulli",
            f"the rewards are {args.noise}, not Gaussian",
        ),
        "conflict_fraction": (
            args.instance != "conflicting",
            f"the instance is {args.instance!r}",
        ),
        "gap": (args.instance != "conflicting", f"the instance is {args.instance!r}"),
        "heterogeneity": (args.instance != "dubey", "the instance is not linear"),
        "privacy_noise": (
            not _draws_noise(refs, setting, args),
            "no chosen policy or setting draws privacy noise",
        ),
        **{
            name: (not getattr(args, switch, 0), why)
            for name, (switch, why) in FAULT_QUALIFIERS.items()
        },
    }
    for dest, (inert, why) in moot.items():
        if changed(dest) and inert:
            out.append(f"{_flag(dest)} {getattr(args, dest)} changes nothing: {why}")
    return out


def preflight(args: argparse.Namespace, policies: Sequence[str]) -> None:
    """Before anything runs: check ``--out`` is writable and every declared policy option
    set on the command line lies in its declared range (a one-line error if not), and
    print a ``fedbandit: warning:`` line for every option that changes nothing and every
    policy named on an instance kind it is not meant for."""
    from fedbandit_env.cli import build_parser

    check_writable(args.out)
    for option, _ in registry.declared_options().values():
        value = getattr(args, option.name, option.default)
        if value != option.default:
            option.check(value)
    for line in inert_options(args, build_parser(args.command), policies):
        print(f"fedbandit: warning: {line}", file=sys.stderr)
    instance = getattr(args, "instance", None)
    for pid in policies:
        if (
            instance is not None
            and not is_model(pid)
            and not registry.spec(pid).meant_for(instance)
        ):
            meant = ", ".join(registry.spec(pid).instances or ())
            print(
                f"fedbandit: warning: {pid} is meant for the instances {meant}, not "
                f"{instance!r}: it runs off its assumptions",
                file=sys.stderr,
            )


FAST_RATE = 5e6
"""Agent-steps per second of a typical fast path on one core here (``fedbandit speed``
measured Gossip_UCB at 15.7 M, Fed_UCB at 1.3-1.8 M, the linear family at 0.35 M)."""
PETTINGZOO_RATE = 1e5
"""... and of the PettingZoo path (policies without a fast path, saved models: 10-15 k)."""
LONG_RUN_S = 3600.0


def duration_estimate(
    n_agents: int, horizon: int, trials: int, fast: Sequence[bool], workers: int = 1
) -> float:
    """Seconds a run of one policy per entry of ``fast`` (whether it has a fast path)
    takes at the typical rates :data:`FAST_RATE` and :data:`PETTINGZOO_RATE`, its trials
    spread over ``workers`` processes: an estimate to warn with, not a promise.

    Examples:
        >>> duration_estimate(10, 10**6, 20, [True, False])  # doctest: +ELLIPSIS
        2040.0...
    """
    steps = float(n_agents) * horizon * trials
    return sum(steps / (FAST_RATE if f else PETTINGZOO_RATE) for f in fast) / max(1, workers)


def long_run_warning(seconds: float, remedy: str = "lower --horizon or --trials") -> str | None:
    """The warning for a run estimated above an hour (``None`` below); ``remedy`` names
    the options that shorten it.

    Examples:
        >>> long_run_warning(90.0) is None
        True
        >>> long_run_warning(7.2e7)[:32]
        'this run takes about 2.3 years a'
    """
    if seconds <= LONG_RUN_S:
        return None
    units = ((365.25 * 86400, "years"), (86400, "days"), (3600, "hours"))
    size, name = next((u, n) for u, n in units if seconds >= u)
    return (
        f"this run takes about {seconds / size:.1f} {name} at the fast path's typical "
        f"{FAST_RATE / 1e6:.0f} M agent-steps/s and the PettingZoo path's "
        f"{PETTINGZOO_RATE / 1e3:.0f} k (fedbandit speed measures yours); {remedy}, "
        "or Ctrl-C to stop"
    )


def has_fast_path(policy: str, interactive: bool = False) -> bool:
    """Whether ``policy`` (an id or a saved model) runs on a fast path.

    Examples:
        >>> has_fast_path("gossip_ucb"), has_fast_path("ppo:m.zip")
        (True, False)
    """
    if interactive or is_model(policy) or policy not in registry.policy_ids():
        return False
    return registry.spec(policy).fast_entry_point is not None


__all__ = [
    "FAST_RATE",
    "PETTINGZOO_RATE",
    "duration_estimate",
    "has_fast_path",
    "inert_options",
    "long_run_warning",
    "policy_options",
    "preflight",
]
