"""The learned-policy table: every reference and every learner of the learning default,
in the settings a learner trains in, at a short and a long horizon, from one command.

``fedbandit learned --docs`` regenerates the committed page ``docs/learned-measured.md``
(the learned guide's numbers; issue 51's "regenerated, not hand-written"). For each
setting of :data:`LEARNED_SETTINGS` it

1. trains the learners on **train** instances of the learning default (``biased``,
   ``N = 10``, ``M = 5``, ``T = 200``), or reuses the ones already saved under
   ``models/<setting>/`` for the same budget, seed and stack (a second run only
   evaluates):

   - the **deep** learner, one per seed: ``fedbandit train ppo --batched --net arms``
     (:mod:`~fedbandit_env.rl.batched_ppo`) on the horizon-free stack
     (:class:`~fedbandit_env.wrappers.HorizonFree`, so the same model runs at any T)
     that sends what the references send (means and pull shares, ``--share-counts``),
     paid ``team_value`` (honest and cooperative; its own reward in ``local``);
   - the **recurrent** learner, one per seed: ``fedbandit train recurrent_ppo --batched
     --net arms`` (:mod:`~fedbandit_env.rl.recurrent_arm`: the same network with a memory
     per arm, RL^2-style, trained by truncated backpropagation through 25-step rollouts)
     on the same stack and reward;
   - the **SB3** learner: the same stack and network trained by stable-baselines3's
     PPO (four env copies, one seed): the floor the batched loop is measured against;

2. evaluates every registered multi-armed policy meant for the setting (the tuned
   references ``tuned_ts`` / ``tuned_private_ts`` among them:
   :func:`~fedbandit_env.runner.yardstick.yardstick_policies`) and every learner on the
   same held-out instances (trial ``j`` plays instance ``j`` in every row), at each
   horizon of the plan;

3. reports per row the final per-agent regret (mean, 95% bootstrap interval, 90th
   percentile), the share of instances worse than random's mean there, the numbers sent
   per agent-step, the paired difference against the best reference measured there (the
   registered, non-privileged policy of lowest mean regret on these instances: the
   strongest yardstick the suite has for that setting and horizon; rliable's IQM and
   probability of improvement are in ``fedbandit table --against``), and what training
   cost (agent-steps, seconds).

The models trained at ``T = 200`` run at the long horizon past the episode length they
learned on (they warn; the page says so): the rows measure how far a horizon-free
learner carries, not a model trained for that horizon.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env import registry
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.runner.results import TAIL_PERCENTILE, bootstrap_ci
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.runner.yardstick import yardstick_policies
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.settings import SETTINGS

LEARNED_SETTINGS = ("local", "neighbours", "gossip", "gossip+private")
"""The settings a learner trains in (``LearnerStack.for_setting`` refuses the rounds
ones)."""


@dataclass(frozen=True)
class LearnedPlan:
    """What :func:`learned_table` trains and measures (defaults: the committed page).

    Examples:
        >>> LearnedPlan().horizons, LearnedPlan().trials
        ((200, 20000), (300, 10))
        >>> LearnedPlan().quick().deep_timesteps, LearnedPlan().quick().trials
        (6400, (20, 3))
    """

    settings: tuple[str, ...] = LEARNED_SETTINGS
    n_agents: int = 10
    n_arms: int = 5
    instance: str = "biased"
    train_horizon: int = 200
    horizons: tuple[int, ...] = (200, 20_000)
    trials: tuple[int, ...] = (300, 10)
    """Held-out instances per row, one count per horizon."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds of the deep learner."""
    deep_timesteps: int = 3_840_000
    recurrent_timesteps: int = 3_840_000
    """The recurrent learner's budget per seed (0: no recurrent rows)."""
    sb3_timesteps: int = 200_000
    """The SB3 learner's budget (0: no SB3 row)."""
    epsilon: float = 1.0
    models: Path = field(default_factory=lambda: Path("runs/learned"))

    def __post_init__(self) -> None:
        unknown = [s for s in self.settings if s not in LEARNED_SETTINGS]
        if unknown:
            raise ValueError(f"settings must be among {list(LEARNED_SETTINGS)}, got {unknown}")
        if len(self.horizons) != len(self.trials) or not self.horizons:
            raise ValueError("one trial count per horizon")
        if min(self.trials) < 2:
            raise ValueError(f"trials must be >= 2 (an interval needs two), got {self.trials}")
        if self.deep_timesteps < 1 or min(self.sb3_timesteps, self.recurrent_timesteps) < 0:
            raise ValueError("deep_timesteps >= 1, sb3/recurrent_timesteps >= 0, please")
        if not self.seeds:
            raise ValueError("at least one training seed, please")

    def quick(self) -> LearnedPlan:
        """A few minutes' version (small budgets, few trials, the short horizon and a
        tenth of the long one), its learners under ``models/quick`` so that they never
        replace the page's: for trying the command, not for the page.

        Examples:
            >>> LearnedPlan().quick().models.as_posix()
            'runs/learned/quick'
        """
        return replace(
            self,
            models=self.models / "quick",
            horizons=(self.train_horizon, self.horizons[-1] // 10),
            trials=(20, 3),
            seeds=self.seeds[:2],
            deep_timesteps=6_400,
            recurrent_timesteps=min(self.recurrent_timesteps, 6_400),
            sb3_timesteps=min(self.sb3_timesteps, 2_000),
        )


@dataclass(frozen=True)
class LearnedRow:
    """One policy in one setting at one horizon (the module docstring's columns).

    Examples:
        >>> row = LearnedRow("neighbours", 200, "coop_ts", "reference", 2.0, 1.8, 2.2,
        ...                  3.0, 0.0, 10.0, 300)
        >>> row.paired is None, row.train_steps
        (True, 0)
    """

    setting: str
    horizon: int
    policy: str
    kind: str
    """``"reference"``, ``"deep"`` (batched PPO), ``"recurrent"`` (batched PPO with the
    recurrent arms net) or ``"sb3"`` (SB3's PPO)."""
    mean: float
    lo: float
    hi: float
    p90: float
    worse_than_random: float
    """Share of instances whose regret is above random's mean on this row's instances."""
    sends: float
    """Numbers sent per agent-step (message length times links used, over ``N T``)."""
    trials: int
    paired: tuple[float, float, float] | None = None
    """Mean paired difference against :attr:`against` with its 95% interval."""
    against: str = ""
    train_steps: int = 0
    train_seconds: float = 0.0
    privileged: bool = False


def learner_stack(setting: str, epsilon: float) -> Any:
    """The deep and SB3 learners' stack in ``setting`` (module docstring).

    Examples:
        >>> s = learner_stack("gossip", 1.0)
        >>> s.horizon_free, s.share_counts, s.reward, s.memory
        (True, True, 'team_value', True)
    """
    from fedbandit_env.rl.stack import LearnerStack

    private = SETTINGS[setting].private
    talks = SETTINGS[setting].protocol is not None
    return LearnerStack.for_setting(
        setting,
        epsilon if private else None,
        reward="team_value" if talks else "own",
        horizon_free=True,
        share_counts=talks,
    )


def _scenario(plan: LearnedPlan, setting: str, horizon: int, instances: str) -> Scenario:
    private = SETTINGS[setting].private
    return Scenario(
        n_agents=plan.n_agents, n_arms=plan.n_arms, instance=plan.instance, horizon=horizon,
        setting=setting, epsilon=plan.epsilon if private else None, instances=instances,
        link_costs=(1.0, 1.0),
    )  # fmt: skip


def _saved(folder: Path, want: dict[str, Any]) -> dict[str, Any] | None:
    """The saved training record in ``folder`` when it was trained as ``want`` says
    (``batched`` is absent from SB3's records: ``False``)."""
    record_path = folder / "train.json"
    if not (folder / "model.zip").is_file() or not record_path.is_file():
        return None
    record: dict[str, Any] = json.loads(record_path.read_text())
    same = all(record.get(k, False if k == "batched" else None) == v for k, v in want.items())
    return record if same else None


def train_learners(
    plan: LearnedPlan,
    setting: str,
    say: Callable[[str], None] = print,
) -> list[tuple[str, str, Path, dict[str, Any]]]:
    """Train (or reuse) the setting's learners: ``(label, kind, model path, record)``.

    Needs the ``[rl]`` extra (stable-baselines3 and torch).
    """
    from fedbandit_env.rl.train import train_model

    stack = learner_stack(setting, plan.epsilon)
    scenario = _scenario(plan, setting, plan.train_horizon, "train")
    wanted_stack = asdict(
        replace(stack, distribution=scenario.distribution_name, horizon=plan.train_horizon)
    )
    jobs = [(f"bppo_s{seed}", "deep", "ppo", seed, plan.deep_timesteps, True)
            for seed in plan.seeds]  # fmt: skip
    if plan.recurrent_timesteps:
        jobs += [(f"rppo_s{seed}", "recurrent", "recurrent_ppo", seed, plan.recurrent_timesteps,
                  True) for seed in plan.seeds]  # fmt: skip
    if plan.sb3_timesteps:
        jobs.append(("sb3_ppo_s0", "sb3", "ppo", 0, plan.sb3_timesteps, False))
    out = []
    for name, kind, algo, seed, timesteps, batched in jobs:
        folder = plan.models / setting.replace("+", "_") / name
        want = {"algo": algo, "timesteps": timesteps, "seed": seed, "stack": wanted_stack,
                "batched": batched}  # fmt: skip
        record = _saved(folder, want)
        if record is None:
            say(f"  training {name} in {setting} ({timesteps:,} agent-steps)")
            path = train_model(
                algo, scenario, stack, timesteps, folder, seed=seed, net="arms",
                copies=64 if batched else 4, batched=batched, progress=False,
            )  # fmt: skip
            record = json.loads((folder / "train.json").read_text())
        else:
            say(f"  reusing {folder} (trained for this plan)")
            path = folder / "model.zip"
        out.append((name, kind, path, record))
    return out


def _message_dim(model: Path, n_arms: int) -> int:
    """Numbers a saved learner sends a step (its stack's message length)."""
    from fedbandit_env.rl.stack import LearnerStack  # the [rl] extra: only with a learner

    return int(LearnerStack.load(model).requirements(n_arms).message_dim)


def _row(
    setting: str, horizon: int, label: str, kind: str, curves: RegretCurves, sends: float,
    random_mean: float, privileged: bool, record: dict[str, Any] | None = None,
) -> LearnedRow:  # fmt: skip
    final = curves.final_per_agent
    lo, hi = bootstrap_ci(final)
    return LearnedRow(
        setting, horizon, label, kind, float(final.mean()), lo, hi,
        float(np.percentile(final, TAIL_PERCENTILE)), float(np.mean(final > random_mean)),
        sends, int(final.size),
        train_steps=int((record or {}).get("agent_steps", 0)),
        train_seconds=float((record or {}).get("seconds", 0.0)), privileged=privileged,
    )  # fmt: skip


def learned_table(
    plan: LearnedPlan,
    *,
    report: Callable[[LearnedRow], None] | None = None,
    say: Callable[[str], None] = print,
    train: Callable[..., list[tuple[str, str, Path, dict[str, Any]]]] = train_learners,
) -> list[LearnedRow]:
    """Train (or reuse) and measure everything of ``plan`` (module docstring); ``report``
    sees each row as it is measured.

    Examples:
        >>> plan = LearnedPlan(settings=("local",), horizons=(20,), trials=(2,),
        ...                    seeds=(0,), deep_timesteps=1, sb3_timesteps=0)
        >>> rows = learned_table(plan, say=lambda s: None, train=lambda *a, **k: [])
        >>> sorted({r.kind for r in rows}), rows[0].setting
        (['reference'], 'local')
    """
    from fedbandit_env.runner.paired import paired_rows

    rows: list[LearnedRow] = []
    for setting in plan.settings:
        say(f"{setting}:")
        learners = train(plan, setting, say)
        for horizon, trials in zip(plan.horizons, plan.trials, strict=True):
            scenario = _scenario(plan, setting, horizon, "held_out")
            problem = scenario.problem()
            options = {"epsilon": plan.epsilon, "privacy_noise": "seeded"}
            measured: list[tuple[str, str, RegretCurves, float, bool, dict[str, Any]]] = []
            for pid in yardstick_policies(setting, plan.instance):
                spec = registry.spec(pid)
                kwargs = spec.options(options, problem)
                curves = evaluate(pid, scenario, kwargs, trials=trials, record_every=horizon)
                dim = spec.make(**kwargs).requirements(plan.n_agents, plan.n_arms).message_dim
                measured.append((pid, "reference", curves, dim, spec.privileged, {}))
            for label, kind, path, record in learners:
                with warnings.catch_warnings():  # past its training horizon: on the page
                    warnings.simplefilter("ignore")
                    curves = evaluate(f"{record.get('algo', 'ppo')}:{path}", scenario,
                                      trials=trials, record_every=horizon, label=label)  # fmt: skip
                dim = _message_dim(path, plan.n_arms)
                measured.append((label, kind, curves, dim, False, record))
            floor = [c for _, kind, c, _, _, _ in measured if kind == "reference"]
            random_mean = next(
                (float(c.final_per_agent.mean()) for c in floor
                 if "floor" in registry.spec(c.policy).tags),
                float("inf"),
            )  # fmt: skip
            fair = [(float(c.final_per_agent.mean()), c.policy)
                    for _, kind, c, _, privileged, _ in measured
                    if kind == "reference" and not privileged]  # fmt: skip
            against = min(fair)[1] if fair else ""
            pairs = {}
            if against:
                for p in paired_rows([m[2] for m in measured], against):
                    pairs[p["policy"]] = (p["mean_diff"], *p["mean_diff_ci95"])
            for label, kind, curves, width, privileged, record in measured:
                links = float(curves.comm_cost[:, -1].mean()) / (plan.n_agents * horizon)
                row = _row(setting, horizon, label, kind, curves, width * links, random_mean,
                           privileged, record)  # fmt: skip
                if label in pairs:
                    row = replace(row, paired=pairs[label], against=against)
                rows.append(row)
                if report is not None:
                    report(row)
    return rows


def format_row(row: LearnedRow) -> str:
    """One row as the command prints it.

    Examples:
        >>> row = LearnedRow("local", 200, "random", "reference", 48.0, 47.0, 49.0, 50.0,
        ...                  0.5, 0.0, 300)
        >>> " ".join(format_row(row).split())
        'local T=200 random reference 48.0 [47.0, 49.0] p90 50.0'
    """
    paired = ""
    if row.paired is not None:
        d, lo, hi = row.paired
        paired = f"  vs {row.against} {paired_text((d, lo, hi))}"
    return (
        f"{row.setting:<15} T={row.horizon:<6} {row.policy + '*' * row.privileged:<18} "
        f"{row.kind:<9} {row.mean:7.1f} [{row.lo:.1f}, {row.hi:.1f}]  p90 {row.p90:.1f}" + paired
    )


def paired_text(paired: tuple[float, float, float]) -> str:
    """A paired difference with its interval, signed; two decimals under 1 in size (an
    interval's end near 0 must not round onto it).

    Examples:
        >>> paired_text((0.43, 0.04, 0.77)), paired_text((8.61, 7.2, 10.1))
        ('+0.43 [+0.04, +0.77]', '+8.6 [+7.2, +10.1]')
    """

    def one(x: float) -> str:
        return f"{x:+.2f}" if abs(x) < 1 else f"{x:+.1f}"

    d, lo, hi = paired
    return f"{one(d)} [{one(lo)}, {one(hi)}]"


def _sends(x: float) -> str:
    return f"{x:.2f}" if x < 100 else f"{x:,.0f}"


def summary(rows: Sequence[LearnedRow]) -> list[str]:
    r"""The page's generated findings: per setting and horizon, the best of each kind and
    the deep learner's distance to the strongest reference.

    Examples:
        >>> rows = [LearnedRow("gossip", 200, "coop_ts", "reference", 2.0, 1.8, 2.2, 3.0,
        ...                    0.0, 10.0, 300),
        ...         LearnedRow("gossip", 200, "bppo_s0", "deep", 8.0, 7.0, 9.0, 12.0,
        ...                    0.0, 10.0, 300, (6.0, 5.0, 7.0), "coop_ts")]
        >>> print(summary(rows)[0].replace("; ", ";\n"))
        - `gossip`, T = 200: best reference `coop_ts` 2.0;
        best deep seed `bppo_s0` 8.0 (4.0x `coop_ts`, paired +6.0 [+5.0, +7.0]).
    """
    out = []
    keys = dict.fromkeys((r.setting, r.horizon) for r in rows)
    for setting, horizon in keys:
        here = [r for r in rows if (r.setting, r.horizon) == (setting, horizon)]
        refs = [r for r in here if r.kind == "reference" and not r.privileged]
        if not refs:
            continue
        best = min(refs, key=lambda r: r.mean)
        line = f"- `{setting}`, T = {horizon}: best reference `{best.policy}` {best.mean:.1f}"
        for kind in ("deep", "recurrent"):
            learners = [r for r in here if r.kind == kind]
            if not learners:
                continue
            d = min(learners, key=lambda r: r.mean)
            against = next((r for r in here if r.policy == d.against), best)
            ratio = d.mean / against.mean if against.mean > 0 else float("inf")
            line += (f"; best {kind} seed `{d.policy}` {d.mean:.1f} "
                     f"({ratio:.1f}x `{against.policy}`")  # fmt: skip
            if d.paired is not None:
                line += f", paired {paired_text(d.paired)}"
            line += ")"
        out.append(line + ".")
    for setting in dict.fromkeys(r.setting for r in rows):
        first = min(r.horizon for r in rows if r.setting == setting)
        here = [r for r in rows if (r.setting, r.horizon) == (setting, first)]
        rates = {kind: [r.train_steps / r.train_seconds for r in here
                        if r.kind == kind and r.train_seconds > 0]
                 for kind in ("deep", "recurrent", "sb3")}  # fmt: skip
        if rates["deep"] and rates["sb3"]:
            fast, slow = float(np.mean(rates["deep"])), float(np.mean(rates["sb3"]))
            line = (
                f"- training speed in `{setting}` (this run, this machine): batched PPO "
                f"{fast:,.0f} agent-steps/s (mean over seeds), SB3's PPO {slow:,.0f}: "
                f"{fast / slow:.1f}x"
            )
            if rates["recurrent"]:
                rec = float(np.mean(rates["recurrent"]))
                line += f"; the recurrent learner {rec:,.0f}: {rec / slow:.1f}x SB3's PPO"
            out.append(line + ".")
    return out


def save_rows(
    rows: Sequence[LearnedRow], plan: LearnedPlan, seconds: float, path: Path, measured: str
) -> Path:
    """Write what a run measured (its rows, plan, duration and conditions line) as JSON,
    so that the page can be written again without measuring (``fedbandit learned
    --render-only``).

    Examples:
        >>> import tempfile
        >>> row = LearnedRow("local", 20, "random", "reference", 9.0, 8.0, 10.0, 11.0,
        ...                  0.5, 0.0, 3, paired=(1.0, 0.5, 1.5), against="local_ts")
        >>> path = save_rows([row], LearnedPlan(), 60.0, Path(tempfile.mkdtemp()) / "r.json",
        ...                  "- measured: then")
        >>> load_rows(path)[0] == [row]
        True
    """
    from fedbandit_env.files import strict_json, write_text_atomic

    plan_fields = {**asdict(plan), "models": str(plan.models)}
    record = {"plan": plan_fields, "seconds": seconds, "measured": measured,
              "rows": [asdict(r) for r in rows]}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, strict_json(record, indent=1) + "\n")


def load_rows(path: Path) -> tuple[list[LearnedRow], LearnedPlan, float, str]:
    """What :func:`save_rows` wrote: ``(rows, plan, seconds, measured line)``.

    Raises:
        ValueError: If the file holds no saved run.
    """
    try:
        record = json.loads(Path(path).read_text())
        plan_fields: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in record["plan"].items()
        }
        plan_fields["models"] = Path(plan_fields["models"])
        plan = LearnedPlan(**plan_fields)
        rows = []
        for r in record["rows"]:
            paired = tuple(r["paired"]) if r.get("paired") is not None else None
            rows.append(LearnedRow(**{**r, "paired": paired}))
        return rows, plan, float(record["seconds"]), str(record["measured"])
    except (OSError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path}: not a saved run of fedbandit learned ({err})") from None


def markdown(
    rows: Sequence[LearnedRow],
    plan: LearnedPlan,
    command: str,
    seconds: float,
    measured: str | None = None,
) -> str:
    """The committed page: the conditions, the findings, one table per setting and
    horizon, best first; ``measured``: the conditions line of the run (default: now).

    Examples:
        >>> rows = [LearnedRow("local", 200, "random", "reference", 48.0, 47.0, 49.0, 50.0,
        ...                    0.5, 0.0, 300)]
        >>> page = markdown(rows, LearnedPlan(), "fedbandit learned --docs", 60.0)
        >>> "| `random` | reference | 0.00 | 48.0 [47.0, 49.0] | 50.0 | 50% |  |  |" in page
        True
    """
    from fedbandit_env.files import measured_line

    out = [
        "# Learned policies against every reference (generated)",
        "",
        f"Generated by `{command}`, never edited (the [learned guide](guides/learned.md)",
        "says how each learner is built and trained). Every registered multi-armed",
        "reference meant for the setting and every learner, on the same held-out",
        "instances of the learning default (trial `j` plays instance `j` in every row).",
        "`kind`: `reference` (registered; `tuned_*` are the index policies `fedbandit tune`",
        "tuned on train instances), `deep` (`fedbandit train ppo --batched --net arms",
        "--horizon-free --share-counts`, one row per training seed), `recurrent` (the same",
        "network with a memory per arm, RL^2-style: `fedbandit train recurrent_ppo",
        "--batched --net arms`, one row per seed), `sb3` (the same stack and network",
        "trained by stable-baselines3's PPO). `sends`: numbers sent per",
        "agent-step. `worse than random`: share of instances above random's mean.",
        "`paired`: the mean paired difference against the best reference measured there",
        "(the registered, non-privileged policy of lowest mean regret on these instances)",
        "with its 95% bootstrap interval (below 0: better on the same instances).",
        "`trained`: agent-steps and minutes of training on this machine (the SB3 learner's",
        "budget is about the deep learner's minute of training).",
        f"Learners were trained at T = {plan.train_horizon} and run past it at longer",
        "horizons (their observations are horizon-free). `*`: privileged (the oracle pools",
        "every agent's raw rewards).",
        "",
        f"- conditions: N = {plan.n_agents}, M = {plan.n_arms}, held-out `{plan.instance}`"
        f" instances, Bernoulli rewards, complete graph, epsilon = {plan.epsilon:g} in"
        f" `+private` settings; instances per row: "
        + ", ".join(f"{n} at T = {h}" for h, n in zip(plan.horizons, plan.trials, strict=True))
        + f"; deep learners: seeds {', '.join(map(str, plan.seeds))}; "
        f"{plan.deep_timesteps:,} agent-steps each; recurrent learners: "
        + (
            f"the same seeds, {plan.recurrent_timesteps:,} agent-steps each"
            if plan.recurrent_timesteps
            else "none"
        )
        + "; SB3 learner: "
        + (f"{plan.sb3_timesteps:,} agent-steps" if plan.sb3_timesteps else "none")
        + f"; the whole run {seconds / 60:.0f} min",
        measured if measured is not None else measured_line(),
        "",
        "## Findings",
        "",
        *summary(rows),
        "",
    ]
    for setting, horizon in dict.fromkeys((r.setting, r.horizon) for r in rows):
        here = sorted((r for r in rows if (r.setting, r.horizon) == (setting, horizon)),
                      key=lambda r: r.mean)  # fmt: skip
        against = next((r.against for r in here if r.against), "")
        out += [
            f"## `{setting}`, T = {horizon}",
            "",
            f"| policy | kind | sends | regret [95% CI] | p90 | worse than random | "
            f"paired vs `{against}` | trained |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in here:
            paired = "" if r.paired is None else paired_text(r.paired)
            trained = (
                f"{r.train_steps / 1e6:.2f}M, {r.train_seconds / 60:.1f} min"
                if r.train_steps else ""
            )  # fmt: skip
            out.append(
                f"| `{r.policy}`{'*' * r.privileged} | {r.kind} | {_sends(r.sends)} | "
                f"{r.mean:.1f} [{r.lo:.1f}, {r.hi:.1f}] | {r.p90:.1f} | "
                f"{r.worse_than_random:.0%} | {paired} | {trained} |"
            )
        out.append("")
    return "\n".join(out)


__all__ = [
    "LEARNED_SETTINGS",
    "LearnedPlan",
    "LearnedRow",
    "format_row",
    "learned_table",
    "learner_stack",
    "load_rows",
    "markdown",
    "paired_text",
    "save_rows",
    "summary",
    "train_learners",
]
