"""Tidy results: CSV rows, summary tables and the configuration beside them."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env.extras import require
from fedbandit_env.files import package_versions, strict_json, write_text_atomic
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.type_aliases import FloatArray

CSV_COLUMNS = (
    "scenario",
    "setting",
    "policy",
    "seed",
    "agent",
    "t",
    "regret",
    "comm_cost",
    "privacy_spent",
    "privacy_delta",
    "privileged",
)
"""The tidy table: one row per (scenario, setting, policy, seed, agent, recorded step)."""


def tidy_columns(curves: Sequence[RegretCurves]) -> dict[str, np.ndarray]:
    """The tidy table as columns (see :data:`CSV_COLUMNS`).

    ``seed`` is the trial index ``j`` (trial ``j`` of the experiment's seed, the same
    run in ``fedbandit bench`` and ``fedbandit sweep``); ``regret`` that agent's
    cumulative pseudo-regret at step ``t``; ``comm_cost`` the whole network's cumulative
    communication cost, ``privacy_spent`` each agent's epsilon spent by ``t`` and
    ``privacy_delta`` its delta (per episode; repeated on every agent's row);
    ``privileged`` 1 where the policy used what its setting does not give (the pooled
    oracle, a model trained on a privileged reward: the tables' ``*``), else 0.

    Examples:
        >>> c = RegretCurves("p", np.array([1, 2]), np.zeros((1, 3, 2)), scenario="s")
        >>> cols = tidy_columns([c])
        >>> cols["agent"].tolist(), cols["t"].tolist()
        ([0, 0, 1, 1, 2, 2], [1, 2, 1, 2, 1, 2])
    """
    parts: dict[str, list[np.ndarray]] = {k: [] for k in CSV_COLUMNS}
    for c in curves:
        trials, agents, records = c.regret.shape
        rows = trials * agents * records
        parts["scenario"].append(np.full(rows, c.scenario, dtype=object))
        parts["setting"].append(np.full(rows, c.setting or NO_SETTING, dtype=object))
        parts["policy"].append(np.full(rows, c.policy, dtype=object))
        parts["seed"].append(np.repeat(c.seeds, agents * records))
        parts["agent"].append(np.tile(np.repeat(np.arange(agents), records), trials))
        parts["t"].append(np.tile(c.t, trials * agents))
        parts["regret"].append(c.regret.ravel())
        parts["comm_cost"].append(
            np.broadcast_to(c.comm_cost[:, None, :], (trials, agents, records)).ravel()
        )
        parts["privacy_spent"].append(np.tile(c.privacy_spent, trials * agents))
        parts["privacy_delta"].append(np.full(rows, c.privacy_delta))
        parts["privileged"].append(np.full(rows, int(bool(c.meta.get("privileged")))))
    return {k: np.concatenate(v) if v else np.zeros(0, dtype=object) for k, v in parts.items()}


def write_csv(curves: Sequence[RegretCurves], path: str | Path) -> Path:
    """Write the tidy table (:func:`tidy_columns`) as CSV.

    Examples:
        >>> import tempfile, os
        >>> c = RegretCurves("p", np.array([1, 2]), np.arange(8.0).reshape(2, 2, 2))
        >>> p = write_csv([c], os.path.join(tempfile.mkdtemp(), "r.csv"))
        >>> header, first = p.read_text().splitlines()[:2]
        >>> header
        'scenario,setting,policy,seed,agent,t,regret,comm_cost,privacy_spent,privacy_delta,privileged'
        >>> first
        ',own,p,0,0,1,0.0,0.0,nan,nan,0'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = tidy_columns(curves)
    tmp = path.with_name(path.name + ".part")
    with tmp.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(zip(*(cols[k].tolist() for k in CSV_COLUMNS), strict=True))
    tmp.replace(path)
    return path


def write_parquet(curves: Sequence[RegretCurves], path: str | Path) -> Path | None:
    """Write the tidy table as Parquet if ``pyarrow`` is installed (else ``None``).

    Examples:
        >>> import tempfile, os
        >>> c = RegretCurves("p", np.array([1]), np.zeros((1, 2, 1)))
        >>> p = write_parquet([c], os.path.join(tempfile.mkdtemp(), "r.parquet"))
        >>> p is None or p.suffix == ".parquet"
        True
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = tidy_columns(curves)
    table = pa.table({k: pa.array(v.tolist() if v.dtype == object else v) for k, v in cols.items()})
    tmp = path.with_name(path.name + ".part")
    pq.write_table(table, tmp)
    tmp.replace(path)
    return path


def _read_columns(path: Path) -> dict[str, list[Any]]:
    if path.suffix == ".parquet":
        pq = require("pyarrow.parquet", "parquet", "reading Parquet")
        return {str(k): v for k, v in pq.read_table(path).to_pydict().items()}
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{str(path)!r} is empty")
        rows = list(reader)
    for line, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise ValueError(
                f"{str(path)!r} line {line} has {len(row)} fields, the header {len(header)}: "
                "the table is cut short or damaged (rewrite it, e.g. rerun the command)"
            )
    values = list(zip(*rows, strict=True)) or [() for _ in header]
    return {name: list(col) for name, col in zip(header, values, strict=True)}


def _where(path: Path, i: int) -> str:
    """Where data row ``i`` of a table is: its line in a CSV (the header is line 1), its
    row in Parquet."""
    return f"row {i}" if path.suffix == ".parquet" else f"line {i + 2}"


def _column(
    raw: dict[str, list[Any]], name: str, dtype: Any, path: Path, default: Any = None
) -> Any:
    """Column ``name`` as an array of ``dtype``; a cell that is not one names its file,
    line and column (Parquet: its row)."""
    values = raw.get(name)
    if values is None:
        return np.asarray([default] * len(raw["policy"]), dtype=dtype)
    try:
        return np.asarray(values, dtype=dtype)
    except (ValueError, TypeError):
        for i, v in enumerate(values):
            try:
                np.asarray(v, dtype=dtype)
            except (ValueError, TypeError):
                kind = "an integer" if dtype is np.int64 else "a number"
                raise ValueError(
                    f"{str(path)!r} {_where(path, i)}, column {name!r}: {v!r} is not {kind}"
                ) from None
        raise  # pragma: no cover - the array failed but no cell did


def _check_non_negative(values: Any, name: str, path: Path) -> None:
    """Refuse a cell no run writes: a NaN, an infinity, a negative value."""
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{str(path)!r} {_where(path, i)}, column {name!r}: {float(values[i])} is not a "
            f"{name} any run writes (finite and >= 0): the table was edited or damaged"
        )


def read_csv(path: str | Path) -> list[RegretCurves]:
    """Read a tidy table (CSV or ``.parquet``) back: one :class:`RegretCurves` per
    (scenario, policy), in order of first appearance.

    Tables written before the tidy format (``trial`` instead of ``seed``, no
    ``scenario`` or ``privacy_spent``) are read too.

    Examples:
        >>> import tempfile, os
        >>> c = RegretCurves("p", np.array([1, 2]), np.arange(8.0).reshape(2, 2, 2))
        >>> back = read_csv(write_csv([c], os.path.join(tempfile.mkdtemp(), "r.csv")))
        >>> bool(np.array_equal(back[0].regret, c.regret))
        True
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"no results table at {str(path)!r}")
    raw = _read_columns(path)
    seed_key = "trial" if "trial" in raw and "seed" not in raw else "seed"  # older tables
    missing = {"policy", seed_key, "agent", "t", "regret"} - set(raw)
    if missing:
        raise ValueError(
            f"{str(path)!r} is not a results table: it lacks the columns {sorted(missing)} "
            f"(a table of fedbandit bench or sweep has {', '.join(CSV_COLUMNS)})"
        )
    n = len(raw["policy"])
    scenario = [str(v) for v in raw.get("scenario", [""] * n)]
    setting = [str(v) for v in raw.get("setting", [""] * n)]
    policy = [str(v) for v in raw["policy"]]
    seed = _column(raw, seed_key, np.int64, path)
    agent = _column(raw, "agent", np.int64, path)
    step = _column(raw, "t", np.int64, path)
    regret = _column(raw, "regret", np.float64, path)
    cost = _column(raw, "comm_cost", np.float64, path, 0.0)
    privacy = _column(raw, "privacy_spent", np.float64, path, "nan")
    deltas = _column(raw, "privacy_delta", np.float64, path, "nan")
    flags = _column(raw, "privileged", np.float64, path, 0)  # older tables: 0
    _check_non_negative(regret, "regret", path)  # pseudo-regret: never NaN, never < 0
    _check_non_negative(cost, "comm_cost", path)
    groups: dict[tuple[str, str, str], list[int]] = {}
    for row, key in enumerate(zip(scenario, setting, policy, strict=True)):
        groups.setdefault(key, []).append(row)
    out = []
    for (label, info, name), rows in groups.items():
        idx = np.asarray(rows)
        seeds, si = np.unique(seed[idx], return_inverse=True)
        agents, ai = np.unique(agent[idx], return_inverse=True)
        steps, ti = np.unique(step[idx], return_inverse=True)
        shape = (seeds.size, agents.size, steps.size)
        if idx.size != np.prod(shape):
            raise ValueError(
                f"{str(path)!r}: {label or 'the'} {name} rows do not fill a "
                f"seeds x agents x steps grid {shape}"
            )
        reg = np.full(shape, np.nan)
        reg[si, ai, ti] = regret[idx]
        comm = np.zeros((seeds.size, steps.size))
        comm[si, ti] = cost[idx]
        spent = np.full(steps.size, np.nan)
        spent[ti] = privacy[idx]
        out.append(
            RegretCurves(
                name,
                steps,
                reg,
                comm_cost=comm,
                privacy_spent=spent,
                privacy_delta=float(deltas[idx[0]]),
                seeds=seeds,
                scenario=label,
                setting=info,
            )
        )
        if flags[idx].any():
            out[-1].meta["privileged"] = 1
    return out


def bootstrap_ci(
    values: FloatArray, level: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (one value per trial).

    Trials are the independent units, so they are what is resampled; the generator is
    seeded, so a table prints the same interval every time. One value: a point.

    Examples:
        >>> lo, hi = bootstrap_ci(np.array([1.0, 2.0, 3.0, 4.0]))
        >>> 1.0 <= lo < 2.5 < hi <= 4.0
        True
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size < 2:
        return float(x.mean()), float(x.mean())
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return float(lo), float(hi)


TAIL_PERCENTILE = 90
"""The high percentile of the trials' final per-agent regret that tables show."""


def summary_rows(curves: Sequence[RegretCurves]) -> list[dict[str, Any]]:
    """One summary dict per policy: final per-agent and group regret over trials, with
    the tail: ``per_agent_p90`` (the 90th percentile over trials) and, where a
    ``random`` run of the same scenario is among ``curves``, ``worse_than_random``: the
    share of trials whose final per-agent regret exceeds random's mean (None without
    one). A mean hides a policy that fails on a few instances; these two do not.

    Examples:
        >>> c = RegretCurves("p", np.array([5]), np.array([[[1.0], [3.0]], [[2.0], [4.0]]]))
        >>> r = RegretCurves("random", np.array([5]), np.full((2, 2, 1), 2.0))
        >>> row = summary_rows([c, r])[0]
        >>> row["per_agent_mean"], row["group_mean"], row["worse_than_random"]
        (2.5, 5.0, 0.5)
    """
    random_mean = {
        (c.scenario, c.setting): float(c.final_per_agent.mean())
        for c in curves
        if c.policy == "random"
    }
    rows = []
    for c in curves:
        pa, grp = c.final_per_agent, c.final_group
        lo, hi = bootstrap_ci(pa)
        ref = random_mean.get((c.scenario, c.setting))
        rows.append(
            {
                "policy": c.policy,
                **({"setting": c.setting} if c.setting else {}),
                "horizon": int(c.t[-1]),
                "trials": c.n_trials,
                "per_agent_mean": float(pa.mean()),
                "per_agent_std": float(pa.std(ddof=1)) if pa.size > 1 else 0.0,
                "per_agent_min": float(pa.min()),
                "per_agent_max": float(pa.max()),
                "per_agent_ci95": [lo, hi],
                "per_agent_p90": float(np.percentile(pa, TAIL_PERCENTILE)),
                "worse_than_random": None if ref is None else float(np.mean(pa > ref)),
                "group_mean": float(grp.mean()),
                "late_slope": float(c.late_slope.mean()),
                "comm_cost": float(c.comm_cost[:, -1].mean()),
                "seconds_per_trial": float(c.seconds.mean()) if c.seconds.size else 0.0,
                **{k: v for k, v in c.meta.items() if isinstance(v, int | float | str)},
            }
        )
    return rows


PRIVILEGED_NOTE = (
    "privileged: uses what the setting does not give (the oracle pools every agent's raw "
    "rewards; a model trained on neg_regret or team saw the global means)"
)
"""The footnote of a table with a privileged row (``*``)."""


def _share(worse: float | None) -> str:
    """The ``worse than random`` cell: a percentage, ``-`` without a random run."""
    return "-" if worse is None else f"{100 * worse:.0f}%"


def format_table(curves: Sequence[RegretCurves]) -> str:
    """A fixed-width table of :func:`summary_rows` for the terminal.

    ``95% CI`` is the bootstrap interval of the mean over trials (:func:`bootstrap_ci`);
    ``late slope`` is the per-agent regret per step over the last quarter of the
    horizon: a flattening curve has a slope far below a linear one's. ``p90`` is the
    90th percentile of the trials' per-agent regret and ``> random`` the share of trials
    worse than uniform random's mean (``-`` without a ``random`` run in the table). A
    policy marked ``*`` is privileged: it used information outside the setting.

    Examples:
        >>> c = RegretCurves("p", np.array([5]), np.ones((2, 2, 1)))
        >>> print(format_table([c]).splitlines()[0][:64].rstrip())
        policy      per-agent regret (mean ± std)   95% CI
    """
    rows = summary_rows(curves)
    w = max([12] + [len(str(r["policy"])) + 3 for r in rows])
    head = (
        f"{'policy':<{w}}{'per-agent regret (mean ± std)':<32}{'95% CI':<20}{'[min, max]':<20}"
        f"{'p90':<10}{'> random':<10}"
        f"{'group regret':<15}{'late slope':<12}{'comm cost':<12}{'s/trial'}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        name = r["policy"] + ("*" if r.get("privileged") else "")
        lo, hi = r["per_agent_ci95"]
        worse = r["worse_than_random"]
        lines.append(
            f"{name:<{w}}{r['per_agent_mean']:>12.1f} ± {r['per_agent_std']:<17.1f}"
            f"{f'[{lo:.1f}, {hi:.1f}]':<20}"
            f"[{r['per_agent_min']:.1f}, {r['per_agent_max']:.1f}]".ljust(w + 72)
            + f"{r['per_agent_p90']:<10.1f}"
            + f"{_share(worse):<10}"
            + f"{r['group_mean']:<15.1f}{r['late_slope']:<12.4f}{r['comm_cost']:<12.4g}"
            + f"{r['seconds_per_trial']:.2f}"
        )
    if any(r.get("privileged") for r in rows):
        lines.append("* " + PRIVILEGED_NOTE)
    return "\n".join(lines)


def markdown_table(curves: Sequence[RegretCurves], sort: bool = True) -> str:
    """:func:`summary_rows` as a Markdown table (for docs and reports): per-agent regret
    with its 95% interval, ``p90``, the share worse than random's mean and the
    communication cost of a trial; best first where ``sort``. A
    privileged policy carries ``*`` and a footnote, as in :func:`format_table`.

    Examples:
        >>> c = RegretCurves("p", np.array([5]), np.ones((2, 2, 1)))
        >>> print(markdown_table([c]))
        | policy | per-agent regret [95% CI] | p90 | worse than random | comm cost |
        |---|---|---|---|---|
        | p | 1.0 [1.0, 1.0] | 1.0 | - | 0 |
    """
    rows = summary_rows(curves)
    if sort:
        rows.sort(key=lambda r: r["per_agent_mean"])
    lines = [
        "| policy | per-agent regret [95% CI] | p90 | worse than random | comm cost |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        name = r["policy"] + ("\\*" if r.get("privileged") else "")
        lo, hi = r["per_agent_ci95"]
        worse = r["worse_than_random"]
        lines.append(
            f"| {name} | {r['per_agent_mean']:.1f} [{lo:.1f}, {hi:.1f}] "
            f"| {r['per_agent_p90']:.1f} | {_share(worse)} "
            f"| {r['comm_cost']:,.0f} |"
        )
    if any(r.get("privileged") for r in rows):
        lines += ["", "\\* " + PRIVILEGED_NOTE]
    return "\n".join(lines)


NO_SETTING = "own"
"""The ``setting`` column of rows run without a setting: each policy in the env it asks for."""

RESULTS_VIEW = (
    "privileged: the per-agent regret at every recorded step shows each agent's arms, "
    "which follow from its own raw rewards, and with simulated rewards this file's seed and "
    "scenario regenerate every raw reward (secure noise changes neither); like the env's "
    "infos, share it only where the raw rewards may go (the privacy guide, 'Results are a "
    "privileged view')"
)
"""What a results folder is in the threat model: every ``config.json`` says it."""


def write_config(config: dict[str, Any], path: str | Path) -> Path:
    """Write the configuration that produced a result as indented JSON, atomically, with
    the versions of the packages that produced it (``versions``) and what the folder is
    in the threat model (``privacy_view``: :data:`RESULTS_VIEW`).

    Examples:
        >>> import json, os, tempfile
        >>> p = write_config({"horizon": 10}, os.path.join(tempfile.mkdtemp(), "c.json"))
        >>> c = json.loads(p.read_text())
        >>> c["horizon"], sorted(c["versions"])[:2]
        (10, ['fedbandit_env', 'gymnasium'])
    """
    config = {**config, "versions": package_versions(), "privacy_view": RESULTS_VIEW}
    text = strict_json(config, indent=2, sort_keys=True) + "\n"
    return write_text_atomic(path, text)
