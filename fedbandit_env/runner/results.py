"""Tidy results: CSV rows, summary tables and the configuration beside them."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env.runner.rollout import RegretCurves

CSV_COLUMNS = ("policy", "trial", "agent", "t", "regret", "comm_cost")


def write_csv(curves: Sequence[RegretCurves], path: str | Path) -> Path:
    """Write one row per (policy, trial, agent, recorded step).

    Columns: ``policy, trial, agent, t, regret, comm_cost``: the cumulative
    pseudo-regret of that agent at step ``t``, and the whole network's cumulative
    communication cost at ``t`` (repeated on each agent's row).

    Example:
        >>> import tempfile, os
        >>> c = RegretCurves("p", np.array([1, 2]), np.arange(8.0).reshape(2, 2, 2))
        >>> p = write_csv([c], os.path.join(tempfile.mkdtemp(), "r.csv"))
        >>> p.read_text().splitlines()[:2]
        ['policy,trial,agent,t,regret,comm_cost', 'p,0,0,1,0.0,0.0']
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS)
        for c in curves:
            trials, agents, _ = c.regret.shape
            for j in range(trials):
                cost = c.comm_cost[j].tolist()
                for i in range(agents):
                    rows = zip(c.t.tolist(), c.regret[j, i].tolist(), cost, strict=True)
                    for step, value, spent in rows:
                        writer.writerow((c.policy, j, i, step, repr(value), repr(spent)))
    return path


def read_csv(path: str | Path) -> list[RegretCurves]:
    """Read back what :func:`write_csv` wrote (one :class:`RegretCurves` per policy).

    Example:
        >>> import tempfile, os
        >>> c = RegretCurves("p", np.array([1, 2]), np.arange(8.0).reshape(2, 2, 2))
        >>> back = read_csv(write_csv([c], os.path.join(tempfile.mkdtemp(), "r.csv")))
        >>> bool(np.array_equal(back[0].regret, c.regret))
        True
    """
    rows: dict[str, dict[tuple[int, int, int], float]] = {}
    costs: dict[str, dict[tuple[int, int], float]] = {}
    with Path(path).open(newline="") as fh:
        for row in csv.DictReader(fh):
            key = (int(row["trial"]), int(row["agent"]), int(row["t"]))
            rows.setdefault(row["policy"], {})[key] = float(row["regret"])
            spent = float(row.get("comm_cost") or 0.0)
            costs.setdefault(row["policy"], {})[(key[0], key[2])] = spent
    out = []
    for policy, cells in rows.items():
        trials = sorted({k[0] for k in cells})
        agents = sorted({k[1] for k in cells})
        steps = sorted({k[2] for k in cells})
        reg = np.array([[[cells[(j, i, s)] for s in steps] for i in agents] for j in trials])
        cost = np.array([[costs[policy][(j, s)] for s in steps] for j in trials])
        out.append(RegretCurves(policy, np.array(steps, dtype=np.int64), reg, comm_cost=cost))
    return out


def summary_rows(curves: Sequence[RegretCurves]) -> list[dict[str, Any]]:
    """One summary dict per policy: final per-agent and group regret over trials.

    Example:
        >>> c = RegretCurves("p", np.array([5]), np.array([[[1.0], [3.0]], [[2.0], [4.0]]]))
        >>> row = summary_rows([c])[0]
        >>> row["per_agent_mean"], row["group_mean"]
        (2.5, 5.0)
    """
    rows = []
    for c in curves:
        pa, grp = c.final_per_agent, c.final_group
        rows.append(
            {
                "policy": c.policy,
                "horizon": int(c.t[-1]),
                "trials": c.n_trials,
                "per_agent_mean": float(pa.mean()),
                "per_agent_std": float(pa.std(ddof=1)) if pa.size > 1 else 0.0,
                "per_agent_min": float(pa.min()),
                "per_agent_max": float(pa.max()),
                "group_mean": float(grp.mean()),
                "late_slope": float(c.late_slope.mean()),
                "comm_cost": float(c.comm_cost[:, -1].mean()),
                "seconds_per_trial": float(c.seconds.mean()) if c.seconds.size else 0.0,
                **{k: v for k, v in c.meta.items() if isinstance(v, int | float | str)},
            }
        )
    return rows


def format_table(curves: Sequence[RegretCurves]) -> str:
    """A fixed-width table of :func:`summary_rows` for the terminal.

    ``late slope`` is the per-agent regret per step over the last quarter of the
    horizon: a flattening curve has a slope far below a linear one's.

    Example:
        >>> c = RegretCurves("p", np.array([5]), np.ones((2, 2, 1)))
        >>> print(format_table([c]).splitlines()[0][:60].rstrip())
        policy      per-agent regret (mean ± std)   [min, max]
    """
    rows = summary_rows(curves)
    w = max([12] + [len(str(r["policy"])) + 2 for r in rows])
    head = (
        f"{'policy':<{w}}{'per-agent regret (mean ± std)':<32}{'[min, max]':<20}"
        f"{'group regret':<15}{'late slope':<12}{'comm cost':<12}{'s/trial'}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['policy']:<{w}}{r['per_agent_mean']:>12.1f} ± {r['per_agent_std']:<17.1f}"
            f"[{r['per_agent_min']:.1f}, {r['per_agent_max']:.1f}]".ljust(w + 52)
            + f"{r['group_mean']:<15.1f}{r['late_slope']:<12.4f}{r['comm_cost']:<12.4g}"
            + f"{r['seconds_per_trial']:.2f}"
        )
    return "\n".join(lines)


def write_config(config: dict[str, Any], path: str | Path) -> Path:
    """Write the configuration that produced a result as indented JSON.

    Example:
        >>> import tempfile, os
        >>> p = write_config({"horizon": 10}, os.path.join(tempfile.mkdtemp(), "c.json"))
        >>> json.loads(p.read_text())
        {'horizon': 10}
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2, sort_keys=True, default=str) + "\n")
    return path
