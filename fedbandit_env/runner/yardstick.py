"""The yardstick: every registered reference in every information setting it runs in,
on the same held-out instances, with its regret beside what it sends.

``fedbandit yardstick --docs`` regenerates the committed page ``docs/yardstick.md``
(regret against communication, setting by setting); ``--quick`` is a tenth of the work.
For each setting of :data:`~fedbandit_env.settings.SETTINGS` with a multi-armed bandit
(``sync`` is the linear family's), every registered multi-armed policy meant for it and
for the instance kind runs the same trials (trial ``j`` plays held-out instance ``j``;
the seeds are :func:`~fedbandit_env.seeding.trial_seeds`'), and a row says:

- the final per-agent pseudo-regret: mean, 95% bootstrap interval, 90th percentile;
- **numbers sent per agent-step**: the numbers of one message (``message_dim``; a rounds
  protocol's send flag included) times the links it used (peer and server uplinks; the
  scenario is run with unit link costs so the cost counts links), over ``N T``;
- the privacy each agent's rewards spent (``inf``: raw statistics leave the agent; the
  ``+private`` settings' tree and a policy's own mechanism alike report their epsilon).

The registry decides what runs (``PolicySpec.runs_in``, ``meant_for``), so a family
registered tomorrow appears in the next regeneration without a line here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fedbandit_env import registry
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.results import TAIL_PERCENTILE, bootstrap_ci
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.settings import SETTINGS


@dataclass(frozen=True)
class YardstickRow:
    """One policy in one setting (see the module docstring).

    Examples:
        >>> row = YardstickRow("local", "random", 10.0, 9.0, 11.0, 12.0, 0, 0.0, 0.0, 20)
        >>> row.numbers_per_agent_step
        0.0
    """

    setting: str
    policy: str
    mean: float
    lo: float
    hi: float
    p90: float
    message_dim: int
    links_per_agent_step: float
    privacy: float
    trials: int
    privileged: bool = False

    @property
    def numbers_per_agent_step(self) -> float:
        """Numbers sent per agent and step: ``message_dim`` times the links used, over
        ``N T``."""
        return float(self.message_dim * self.links_per_agent_step)


def yardstick_settings() -> list[str]:
    """The settings the yardstick measures: every multi-armed one.

    Examples:
        >>> yardstick_settings()[:3]
        ['local', 'local+private', 'gossip']
    """
    return [s for s in SETTINGS if s != "sync"]


def yardstick_policies(setting: str, instance: str) -> list[str]:
    """The registered multi-armed policies meant for ``setting`` and ``instance``.

    Examples:
        >>> ids = yardstick_policies("local", "biased")  # and a plugin's, once registered
        >>> {"kl_ucb", "local_ts", "oracle_ucb", "random"} <= set(ids), "coop_ts" in ids
        (True, False)
    """
    out = []
    for pid in registry.policy_ids():
        spec = registry.spec(pid)
        if spec.bandit == "mab" and spec.runs_in(setting) and spec.meant_for(instance):
            out.append(pid)
    return out


def yardstick(
    settings: Sequence[str] | None = None,
    *,
    n_agents: int = 10,
    n_arms: int = 5,
    instance: str = "biased",
    horizon: int = 2000,
    trials: int = 20,
    epsilon: float = 1.0,
    seed: int = 0,
    report: Callable[[YardstickRow], None] | None = None,
) -> list[YardstickRow]:
    """Run every reference in every setting (module docstring); ``report`` is called on
    each row as it is measured (the command prints it).

    Examples:
        >>> rows = yardstick(["local"], n_agents=2, n_arms=2, horizon=20, trials=2)
        >>> kl = next(r for r in rows if r.policy == "kl_ucb")
        >>> kl.setting, kl.numbers_per_agent_step, kl.trials
        ('local', 0.0, 2)
    """
    names = yardstick_settings() if settings is None else list(settings)
    unknown = [s for s in names if s not in SETTINGS or s == "sync"]
    if unknown:
        raise ValueError(f"settings must be among {yardstick_settings()}, got {unknown}")
    if trials < 2:
        raise ValueError(f"trials must be >= 2 (an interval needs two), got {trials}")
    rows = []
    for setting in names:
        private = SETTINGS[setting].private
        scenario = Scenario(
            n_agents=n_agents, n_arms=n_arms, instance=instance, instances="held_out",
            horizon=horizon, seed=seed, setting=setting, epsilon=epsilon if private else None,
            link_costs=(1.0, 1.0),
        )  # fmt: skip
        problem = scenario.problem()
        options = {"epsilon": epsilon, "privacy_noise": "seeded", "period": 1}
        for pid in yardstick_policies(setting, instance):
            spec = registry.spec(pid)
            kwargs = spec.options(options, problem)
            curves = evaluate(pid, scenario, kwargs, trials=trials, seed=seed,
                              record_every=horizon, progress=False)  # fmt: skip
            final = curves.final_per_agent
            lo, hi = bootstrap_ci(final)
            needs = spec.make(**kwargs).requirements(n_agents, n_arms)
            links = float(curves.comm_cost[:, -1].mean()) / (n_agents * horizon)
            row = YardstickRow(
                setting, pid, float(final.mean()), lo, hi,
                float(np.percentile(final, TAIL_PERCENTILE)), int(needs.message_dim), links,
                float(curves.privacy_spent[-1]), trials, spec.privileged,
            )  # fmt: skip
            rows.append(row)
            if report is not None:
                report(row)
    return rows


def strongest(rows: Sequence[YardstickRow]) -> dict[str, list[str]]:
    """The measured strongest of each setting: the best non-privileged row (lowest mean
    regret) and every non-privileged row whose 95% interval overlaps the best's (its
    lower end at or below the best's upper end), best first. What the ``strongest`` tag
    follows (a test compares the tags with the committed page).

    Examples:
        >>> rows = [YardstickRow("gossip", "a", 4.0, 3.0, 5.0, 6.0, 1, 1, 1, 20),
        ...         YardstickRow("gossip", "b", 4.5, 4.8, 5.2, 6.0, 1, 1, 1, 20),
        ...         YardstickRow("gossip", "c", 9.0, 8.0, 10.0, 12.0, 1, 1, 1, 20),
        ...         YardstickRow("gossip", "o", 1.0, 0.5, 1.5, 2.0, 0, 0, 0, 20, True)]
        >>> strongest(rows)
        {'gossip': ['a', 'b']}
    """
    out: dict[str, list[str]] = {}
    for setting in dict.fromkeys(r.setting for r in rows):
        here = sorted(
            (r for r in rows if r.setting == setting and not r.privileged), key=lambda r: r.mean
        )
        if here:
            out[setting] = [r.policy for r in here if r.lo <= here[0].hi]
    return out


def _number(x: float) -> str:
    if not np.isfinite(x):
        return "inf"
    return f"{x:,.2f}" if x < 100 else f"{x:,.0f}"


def format_row(row: YardstickRow) -> str:
    """One row as the command prints it.

    Examples:
        >>> row = YardstickRow("local", "random", 10.0, 9.0, 11.0, 12.0, 0, 0, 0, 2)
        >>> " ".join(format_row(row).split())
        'local random 10.0 [9.0, 11.0] p90 12.0 sends 0.00 /agent-step eps 0.00'
    """
    return (
        f"{row.setting:<18} {row.policy + '*' * row.privileged:<24} {row.mean:6.1f} "
        f"[{row.lo:.1f}, {row.hi:.1f}]  "
        f"p90 {row.p90:.1f}  sends {_number(row.numbers_per_agent_step)} /agent-step  "
        f"eps {_number(row.privacy)}"
    )


def markdown(rows: Sequence[YardstickRow], conditions: str, command: str) -> str:
    """The committed page: one table per setting, rows by regret.

    Examples:
        >>> rows = [YardstickRow("local", "random", 10.0, 9.0, 11.0, 12.0, 0, 0, 0, 2)]
        >>> page = markdown(rows, "x", "y")
        >>> "| `random` | 10.0 [9.0, 11.0] | 12.0 | 0 | 0.00 | 0.00 | 0.00 |" in page
        True
    """
    from fedbandit_env.files import measured_line

    out = [
        "# The yardstick: regret against communication",
        "",
        f"Generated by `{command}`, never edited: every registered multi-armed",
        "reference in every information setting it is meant for, on the same held-out",
        "instances (trial `j` plays instance `j` in every row), with what it sends.",
        "`sends`: numbers sent per agent-step (the numbers of one message, a rounds",
        "protocol's send flag included, times the peer and server links it used, over",
        "`N T`); `links`: links used per agent-step; `epsilon`: the privacy each agent's",
        "rewards spent by `T` (`inf`: raw statistics leave the agent; the `+private`",
        "settings' tree and a policy's own mechanism both report theirs, so rows of",
        "different settings compare at the same epsilon). Links are counted as the env",
        "counts them for its cost: a peer edge used in a step once, a server upload once.",
        "`*`: privileged, outside the setting (the pooled oracle is one UCB on every",
        "agent's raw rewards: cooperative Thompson sampling can beat its index, so it is",
        "a reference outside the contest, not an upper bound). `strongest`: the best",
        "row that is not privileged and every row whose interval overlaps its interval:",
        "the policies tagged `strongest` are these (a test keeps the tags in step with",
        "this page). The policies' descriptions: [Policies](reference/policies.md) and",
        "[the strongest references](references.md).",
        "",
        f"- conditions: {conditions}",
        measured_line(),
        "",
    ]
    best = strongest(rows)
    for setting in dict.fromkeys(r.setting for r in rows):
        here = sorted((r for r in rows if r.setting == setting), key=lambda r: r.mean)
        named = ", ".join(f"`{p}`" for p in best.get(setting, []))
        out += [
            f"## `{setting}`",
            "",
            f"strongest: {named}",
            "",
            "| policy | regret at T [95% CI] | p90 | message | links | sends | epsilon |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in here:
            out.append(
                f"| `{r.policy}`{'*' * r.privileged} | {r.mean:.1f} [{r.lo:.1f}, {r.hi:.1f}] | "
                f"{r.p90:.1f} | "
                f"{r.message_dim} | {r.links_per_agent_step:.2f} | "
                f"{_number(r.numbers_per_agent_step)} | {_number(r.privacy)} |"
            )
        out.append("")
    return "\n".join(out)


__all__ = [
    "YardstickRow",
    "format_row",
    "markdown",
    "strongest",
    "yardstick",
    "yardstick_policies",
    "yardstick_settings",
]
