"""Dubey & Pentland (NeurIPS 2020), Fig. 1: centralized FedUCB on three axes, with the
corrected private variant (``private_fedlin_ucb``) on the same axes; the panels, the
figure and the report's rows (``examples/dubey_fig1.py`` is the command line).

(A) per-agent regret at the horizon against epsilon (delta = 0.1, d = 10, n = O(M log T))
    for M in {10, 20, 50, 100};
(B) per-agent regret curves for M = 100 at three communication levels, n = O(M^1.5)
    (Wang et al.'s threshold ``D = T log(MT) / (d M)``), Theorem 1's ``D`` (the paper's
    O(M log T): at T = 5e3 and at 1e6 it gives a single round, so the report labels it
    by its rule and its measured rounds) and O(MT) (a round every step), private
    (epsilon = 1) against non-private;
(C) per-agent regret curves against d in {8, 16, 32, 64, 128} (private, epsilon = 1).

Scales: :data:`SCALES`. Deviations from the paper, on purpose: T is 5e3 (A, B) and 2e3
(C) at the default scale, not 1e6-1e7, with 10 trials, not 100; in (C) the decision
sets have ``K = min(d^2, 100)`` vectors, M = 10 agents; the decision sets come from a
pool (``fedbandit_env.problems.linear``). The ``tenth`` scale is a tenth of the paper's
horizon: T = 1e6 in (A) and (B) with 10 trials, and in (C) the paper's ``K = d^2`` for
d = 8, 16, 32 at T = 1e5 with M = 10 (d = 32 scores 1,024 vectors an agent-step); 16.7
CPU-hours on the 2-core development machine, so run it with a store (:class:`Runner`):
every finished trial is kept and an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedbandit_env.reproduce.core import Row, Verdict, less, ordering, parts, stability, table
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.runner.sweep import Run, run_sweep
from fedbandit_env.scenario.scenario import Scenario

SCALES: dict[str, dict[str, Any]] = {
    "quick": {"T": 300, "T_C": 200, "M": (4, 8), "eps": (1.0, 10.0), "d": (4, 8), "M_B": 8,
              "M_C": 4, "trials": 2},
    "default": {"T": 5000, "T_C": 2000, "M": (10, 20, 50, 100), "eps": (0.1, 0.3, 1.0, 3.0, 10.0),
                "d": (8, 16, 32, 64, 128), "M_B": 100, "M_C": 10, "trials": 10},
    "long": {"T": 50_000, "T_C": 10_000, "M": (10, 100), "eps": (0.1, 1.0, 10.0),
             "d": (8, 32, 128), "M_B": 100, "M_C": 10, "trials": 2},
    "tenth": {"T": 1_000_000, "T_C": 100_000, "M": (10, 20, 50, 100),
              "eps": (0.1, 0.3, 1.0, 3.0, 10.0), "d": (8, 16, 32), "K_C": "d^2", "M_B": 100,
              "M_C": 10, "trials": 10},
    "paper": {"T": 10_000_000, "T_C": 1_000_000, "M": (10, 20, 50, 100),
              "eps": (0.1, 0.3, 1.0, 3.0, 10.0), "d": (8, 16, 32, 64, 128), "M_B": 100,
              "M_C": 100, "trials": 100},
}  # fmt: skip


def fig1_scenario(agents: int, dim: int, horizon: int, seed: int, square: bool = False) -> Scenario:
    """Fig. 1's setting: ``K = d^2`` vectors a decision set where ``square`` (the
    paper's), else ``min(d^2, 100)``."""
    return Scenario(
        n_agents=agents,
        n_arms=dim * dim if square else min(dim * dim, 100),
        instance="dubey",
        dim=dim,
        horizon=horizon,
        seed=seed,
    )


@dataclass
class Runner:
    """Runs Fig. 1's trials: in this process (``store`` None), or one
    :class:`~fedbandit_env.runner.sweep.Run` per trial through
    :func:`~fedbandit_env.runner.sweep.run_sweep`, kept in ``store/runs`` (the same trials
    either way: a sweep's run ``j`` is trial ``j`` of the fast path), so a long scale
    resumes after an interruption and a finished one redraws its figure in seconds.
    Delete the store after changing an algorithm: a run's key names its setting and
    options, not the code.

    Attributes:
        store: Folder of the kept runs (None: keep nothing).
        jobs: Worker processes of the store's sweeps (threads of the fast path without
            a store).
        seconds: Wall time of every distinct trial run or read back, summed (the
            compute a scale took, whatever the interruptions; a stored trial two panels
            share counts once).

    Examples:
        >>> import tempfile
        >>> runner = Runner(Path(tempfile.mkdtemp()))
        >>> c = runner("fedlin_ucb", fig1_scenario(2, 3, 40, 0), 2, 0)
        >>> c.final_per_agent.shape, runner.seconds > 0
        ((2,), True)
        >>> again = Runner(runner.store)("fedlin_ucb", fig1_scenario(2, 3, 40, 0), 2, 0)
        >>> bool((again.regret == c.regret).all())
        True
    """

    store: Path | None = None
    jobs: int = 1
    seconds: float = 0.0
    _counted: set[str] = field(default_factory=set, repr=False)

    def __call__(
        self, pid: str, scenario: Scenario, trials: int, seed: int, **kw: Any
    ) -> RegretCurves:
        """``trials`` trials of ``pid`` on ``scenario`` (51 recorded points)."""
        every = max(1, scenario.horizon // 50)
        if self.store is None:
            c = run_fast(pid, scenario, trials, seed=seed, record_every=every, progress=False,
                         workers=self.jobs, **kw)  # fmt: skip
            self.seconds += float(np.sum(c.seconds))
        else:
            runs = [Run("dubey_fig1", scenario, pid, kw, seed, j, every) for j in range(trials)]
            (c,) = run_sweep(runs, self.store, jobs=self.jobs, progress=False)
            fresh = [r.key not in self._counted for r in runs]
            self.seconds += float(np.sum(np.asarray(c.seconds)[fresh]))
            self._counted.update(r.key for r in runs)
        return c


def _rounds(c: RegretCurves, scenario: Scenario) -> int:
    """Synchronisation rounds of a run: its cost over ``c1`` per agent per round."""
    cost = float(c.comm_cost[:, -1].mean())
    return max(1, round(cost / (scenario.link_costs[0] * scenario.n_agents)))


def _corrected(
    run: Runner, scenario: Scenario, rounds: int | None, trials: int, seed: int, eps: float
) -> RegretCurves:
    """The corrected variant with ``rounds`` rounds (``None``: its default schedule)."""
    kw = {} if rounds is None else {"batch": max(1, (scenario.horizon - 1) // rounds)}
    return run("private_fedlin_ucb", scenario, trials, seed, epsilon=eps, **kw)


def guessing(scenario: Scenario) -> float:
    """Expected regret a step of a uniformly random choice: the mean gap of the pool's
    best vectors over its others, times ``(K - 1) / K``."""
    p = scenario.problem()
    best, others = p.global_means[: p.n_best].mean(), p.global_means[p.n_best :].mean()
    return float((best - others) * (p.set_size - 1) / p.set_size)


def panel_a(s: dict[str, Any], seed: int, run: Runner | None = None) -> dict[str, Any]:
    """Final per-agent regret against epsilon, for each M."""
    run = run or Runner()
    out: dict[str, Any] = {"eps": list(s["eps"]), "published": {}, "corrected": {}, "rounds": {},
                           "published_trials": {}, "corrected_trials": {}}  # fmt: skip
    out["guessing"] = guessing(fig1_scenario(s["M"][0], 10, s["T"], seed)) * s["T"]
    for m in s["M"]:
        scenario = fig1_scenario(m, 10, s["T"], seed)
        pub, cor, rounds, trials, cor_trials = [], [], [], [], []
        for eps in s["eps"]:
            c = run("fedlin_ucb_dp", scenario, s["trials"], seed, epsilon=eps)
            n = _rounds(c, scenario)
            pub.append(float(c.final_per_agent.mean()))
            trials.append(c.final_per_agent.tolist())
            corrected = _corrected(run, scenario, None, s["trials"], seed, eps)
            cor.append(float(corrected.final_per_agent.mean()))
            cor_trials.append(corrected.final_per_agent.tolist())
            rounds.append(n)
        out["published"][m], out["corrected"][m], out["rounds"][m] = pub, cor, rounds
        out["published_trials"][m], out["corrected_trials"][m] = trials, cor_trials
    return out


def panel_b(s: dict[str, Any], seed: int, run: Runner | None = None) -> dict[str, Any]:
    """Per-agent regret curves at three communication levels, private and not."""
    run = run or Runner()
    m, horizon = s["M_B"], s["T"]
    scenario = fig1_scenario(m, 10, horizon, seed)
    levels = {
        "O(M^1.5)": {"threshold": horizon * math.log(m * horizon) / (10 * m)},
        "Theorem 1's D": {},
        "O(MT)": {"threshold": 1e-12},
    }
    out: dict[str, Any] = {"guessing": guessing(scenario)}
    for name, kw in levels.items():
        pub = run("fedlin_ucb_dp", scenario, s["trials"], seed, epsilon=1.0, **kw)
        plain = run("fedlin_ucb", scenario, s["trials"], seed, **kw)
        cor = _corrected(run, scenario, _rounds(pub, scenario), s["trials"], seed, 1.0)
        out[name] = {
            "t": pub.t.tolist(),
            "private": pub.per_agent.mean(axis=0).tolist(),
            "non_private": plain.per_agent.mean(axis=0).tolist(),
            "corrected": cor.per_agent.mean(axis=0).tolist(),
            "rounds": {"private": _rounds(pub, scenario), "non_private": _rounds(plain, scenario)},
            "private_trials": pub.final_per_agent.tolist(),
            "corrected_trials": cor.final_per_agent.tolist(),
            "non_private_trials": plain.final_per_agent.tolist(),
        }
    return out


def panel_c(s: dict[str, Any], seed: int, run: Runner | None = None) -> dict[str, Any]:
    """Per-agent regret curves against the dimension (private, epsilon = 1)."""
    run = run or Runner()
    square = s.get("K_C") == "d^2"
    first = fig1_scenario(s["M_C"], s["d"][0], s["T_C"], seed, square)
    out: dict[str, Any] = {"guessing": guessing(first)}
    for d in s["d"]:
        scenario = fig1_scenario(s["M_C"], d, s["T_C"], seed, square)
        pub = run("fedlin_ucb_dp", scenario, s["trials"], seed, epsilon=1.0)
        cor = _corrected(run, scenario, None, s["trials"], seed, 1.0)
        out[d] = {
            "t": pub.t.tolist(),
            "private": pub.per_agent.mean(axis=0).tolist(),
            "corrected": cor.per_agent.mean(axis=0).tolist(),
            "final_spread": float(pub.final_per_agent.std()),
            "private_trials": pub.final_per_agent.tolist(),
        }
    return out


def draw(results: dict[str, Any], path: Path, scale: str) -> None:
    """The three panels, as the paper lays them out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    a, b, c = results["A"], results["B"], results["C"]
    colours = plt.get_cmap("viridis")
    axes[0].axhline(a["guessing"], color="grey", ls="-.", lw=1, label="uniform guessing")
    for j, m in enumerate(a["published"]):
        col: Any = colours(j / max(1, len(a["published"]) - 1))
        axes[0].plot(a["eps"], a["published"][m], "o-", color=col, label=f"M = {m}")
        axes[0].plot(a["eps"], a["corrected"][m], "s--", color=col, alpha=0.7)
    axes[0].set(xscale="log", xlabel="epsilon", ylabel="per-agent regret at T",
                title="(A) privacy budget (solid: as published; dashed: corrected)")  # fmt: skip
    curves_b = {k: v for k, v in b.items() if k != "guessing"}
    curves_c = {k: v for k, v in c.items() if k != "guessing"}
    t_b = next(iter(curves_b.values()))["t"]
    axes[1].plot(t_b, np.array(t_b) * b["guessing"], color="grey", ls="-.", lw=1,
                 label="uniform guessing")  # fmt: skip
    t_c = next(iter(curves_c.values()))["t"]
    axes[2].plot(t_c, np.array(t_c) * c["guessing"], color="grey", ls="-.", lw=1,
                 label="uniform guessing")  # fmt: skip
    for j, (name, row) in enumerate(curves_b.items()):
        col = f"C{j}"
        axes[1].plot(row["t"], row["private"], "-", color=col, label=f"n = {name}")
        axes[1].plot(row["t"], row["non_private"], "--", color=col)
        axes[1].plot(row["t"], row["corrected"], ":", color=col)
    title_b = "(B) communication (solid: private, dashed: non-private, dotted: corrected)"
    axes[1].set(xlabel="t", ylabel="per-agent regret", title=title_b)
    for j, (d, row) in enumerate(curves_c.items()):
        col = colours(j / max(1, len(curves_c) - 1))
        axes[2].plot(row["t"], row["private"], "-", color=col, label=f"d = {d}")
        axes[2].plot(row["t"], row["corrected"], ":", color=col)
    axes[2].set(xlabel="t", ylabel="per-agent regret",
                title="(C) dimension (solid: as published; dotted: corrected)")  # fmt: skip
    for ax in axes:
        ax.legend(fontsize=8)
        ax.title.set_fontsize(9)
    fig.suptitle(f"Dubey & Pentland Fig. 1, reproduced at the {scale!r} scale", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rows(scale: str, out: Path, seed: int = 0, run: Runner | None = None) -> list[Row]:
    """Fig. 1's three claims at one of :data:`SCALES`; draws ``dubey_fig1.png`` in ``out``.
    ``run``: where the trials run (default: in this process, nothing kept)."""
    s = SCALES[scale]
    run = run or Runner()
    results: dict[str, dict[Any, Any]] = {
        "A": panel_a(s, seed, run), "B": panel_b(s, seed, run), "C": panel_c(s, seed, run)
    }  # fmt: skip
    fig = out / "dubey_fig1.png"
    draw(results, fig, scale)
    a, b, c = results["A"], results["B"], results["C"]
    sets_c = "K = d^2" if s.get("K_C") == "d^2" else "K = min(d^2, 100)"
    setting = (f"delta = 0.1, scale {scale!r}: T={s['T']:.0e} (C: {s['T_C']:.0e}, {sets_c}), "
               f"{s['trials']} trials; the scale's trials took {run.seconds / 3600:.2f} "
               "CPU-hours")  # fmt: skip
    eps_labels = [f"eps={e:g}" for e in a["eps"]]
    sizes = list(a["published"])

    def stuck(finals: Sequence[np.ndarray], guessed: Sequence[float]) -> bool:
        """Whether every run is within 10% of uniform guessing's regret (its own K)."""
        return min(float(np.mean(f)) / g for f, g in zip(finals, guessed, strict=True)) > 0.9

    def shares(finals: Sequence[np.ndarray], guessed: Sequence[float]) -> str:
        got = [float(np.mean(f)) / g for f, g in zip(finals, guessed, strict=True)]
        return f"regret / uniform guessing's: {min(got):.2f}-{max(got):.2f}"

    stuck_note = ("every private run is still on the guessing line (the privacy regulariser "
                  "outweighs the data at this horizon), so no ordering here says anything "
                  "about the claim")  # fmt: skip

    def judge_a(finals: Sequence[np.ndarray]) -> Verdict:
        """Fig. 1(A) at every M: regret falls along epsilon for each; ``finals`` holds
        the M's epsilon runs one after the other."""
        n = len(eps_labels)
        verdicts = []
        for j in range(len(sizes)):
            part = finals[j * n : (j + 1) * n]
            g = [a["guessing"]] * n
            verdicts.append("not reproduced" if stuck(part, g) else ordering(eps_labels, part)[0])
        return combine(verdicts)

    def row_a(variant: str, key: str) -> Row:
        finals = [np.array(v) for m in sizes for v in a[f"{variant}_trials"][m]]
        n = len(eps_labels)
        why = []
        for j, m in enumerate(sizes):
            part = finals[j * n : (j + 1) * n]
            verdict, pairs = ordering(eps_labels, part)
            g = [a["guessing"]] * n
            on_line = stuck(part, g)
            why.append(f"M={m}: {'not reproduced' if on_line else verdict} ({pairs}; "
                       f"{shares(part, g)}{'; ' + stuck_note if on_line else ''})")  # fmt: skip
        what = ("centralized FedUCB as published (fedlin_ucb_dp)" if variant == "published"
                else "the corrected private FedUCB (private_fedlin_ucb: fixed schedule, "
                "exact Gaussian-DP noise, the joint noise bound)")  # fmt: skip
        item = "Fig. 1(A)" if variant == "published" else "Fig. 1(A), corrected variant"
        return Row(key, "Dubey & Pentland", item,
                   "per-agent regret falls as the privacy budget epsilon grows (for every M)",
                   f"{what}, {setting}, M in {sizes}",
                   table([f"M={m} {e}" for m in sizes for e in eps_labels], finals),
                   judge_a(finals), "; ".join(why), fig.name,
                   stability=stability(judge_a, finals))  # fmt: skip

    levels = [k for k in b if k != "guessing"]
    level_labels = [f"{k} (rounds: {b[k]['rounds']['private']} private, "
                    f"{b[k]['rounds']['non_private']} non-private)" for k in levels]  # fmt: skip
    guessed_b = [b["guessing"] * s["T"]] * len(levels)

    def judge_b(finals: Sequence[np.ndarray]) -> Verdict:
        """Fig. 1(B): non-private below private at each level (``finals``: the private
        runs, then the non-private ones)."""
        private, plain = finals[: len(levels)], finals[len(levels) :]
        ok = [less(q, p) == "confirmed" for p, q in zip(private, plain, strict=True)]
        if stuck(private, guessed_b) and all(ok):
            ok[0] = False  # only partly: the private side says nothing yet
        return parts(ok)

    finals_b = [np.array(b[k]["private_trials"]) for k in levels] + [
        np.array(b[k]["non_private_trials"]) for k in levels
    ]
    corrected_b = [np.array(b[k]["corrected_trials"]) for k in levels]
    outcome_b = {k: less(finals_b[len(levels) + j], finals_b[j]) for j, k in enumerate(levels)}
    stuck_b = stuck(finals_b[: len(levels)], guessed_b)
    theorem = b["Theorem 1's D"]["rounds"]
    note_b = ("the published private runs are still on the guessing line, so the gap holds "
              "trivially and the communication trade-off of Remark 1 cannot show in them at "
              "this horizon" if stuck_b else "the private runs learn at this horizon")  # fmt: skip
    if not stuck(corrected_b, guessed_b):
        means = [float(np.mean(f)) for f in corrected_b]
        note_b += (f"; the corrected variant, given the published run's rounds, learns at every "
                   f"level ({shares(corrected_b, guessed_b)}), "
                   f"least at {levels[int(np.argmin(means))]} and most at "
                   f"{levels[int(np.argmax(means))]}")  # fmt: skip
    note_b += (f"; Theorem 1's D, the paper's O(M log T), gives {theorem['non_private']} "
               f"round(s) without privacy and {theorem['private']} with it at T = {s['T']:.0e} "
               "(its D grows with T as T / log T), so without privacy it is the least "
               "communicating level here, not the middle one")  # fmt: skip
    dims: list[int] = [d for d in c if d != "guessing"]
    square = s.get("K_C") == "d^2"
    guessed_c = [guessing(fig1_scenario(s["M_C"], d, s["T_C"], seed, square)) * s["T_C"]
                 for d in dims]  # fmt: skip
    dim_labels = [f"d={d}" for d in reversed(dims)]

    def judge_c(finals: Sequence[np.ndarray]) -> Verdict:
        """Fig. 1(C): regret grows with d (``finals`` in increasing d)."""
        if stuck(finals, guessed_c):
            return "not reproduced"
        return ordering(dim_labels, list(finals)[::-1])[0]

    finals_c = [np.array(c[d]["private_trials"]) for d in dims]
    _, pairs_c = ordering(dim_labels, finals_c[::-1])
    note_c = shares(finals_c, guessed_c) + ("; " + stuck_note if stuck(finals_c, guessed_c) else "")
    found = [
        row_a("published", "dubey_fig1a"),
        row_a("corrected", "dubey_fig1a_corrected"),
        Row("dubey_fig1b", "Dubey & Pentland", "Fig. 1(B)",
            "private (epsilon = 1) regret lies above non-private at each communication level, "
            "with a communication-privacy trade-off (Remark 1)",
            f"centralized FedUCB as published (fedlin_ucb_dp) and without noise (fedlin_ucb); "
            f"the corrected variant with the published run's rounds beside them; {setting}, "
            f"M={s['M_B']}",
            table([f"{k} private" for k in level_labels]
                  + [f"{k} non-private" for k in level_labels]
                  + [f"{k} corrected" for k in level_labels], finals_b + corrected_b),
            judge_b(finals_b),
            "; ".join(f"non-private < private at {k} {o}" for k, o in outcome_b.items())
            + "; " + note_b, fig.name, stability=stability(judge_b, finals_b)),
        Row("dubey_fig1c", "Dubey & Pentland", "Fig. 1(C)",
            "per-agent regret grows with the dimension d (about quadratically)",
            f"centralized FedUCB as published (fedlin_ucb_dp), {setting}, M={s['M_C']}",
            table([f"d={d}" for d in dims], finals_c), judge_c(finals_c),
            pairs_c + "; " + note_c, fig.name, stability=stability(judge_c, finals_c)),
    ]  # fmt: skip
    for r in found:  # the trials' own time, also when they were read back from a store
        r.seconds = run.seconds / len(found)
    return found


def combine(verdicts: Sequence[str]) -> Verdict:
    """One verdict from several parts: reproduced if every part is, not reproduced if
    none is even partly, partly otherwise.

    Examples:
        >>> combine(["reproduced", "not reproduced"]), combine(["reproduced"] * 2)
        ('partly', 'reproduced')
    """
    if all(v == "reproduced" for v in verdicts):
        return "reproduced"
    if all(v == "not reproduced" for v in verdicts):
        return "not reproduced"
    return "partly"
