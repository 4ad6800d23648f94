"""The papers' figures and tables as ``fedbandit reproduce`` rows, beside the
algorithms they measure (the core's :mod:`fedbandit_env.reproduce` judges and writes the
report; it names no paper).

Each paper module turns its figures into rows (:mod:`baselines.papers.zhu`,
:mod:`baselines.papers.li_song`, :mod:`baselines.papers.dubey`); the functions here run
one at a report scale, and :func:`register_papers` registers them (called by
:func:`baselines.registration.register_policies`).

Examples:
    >>> from fedbandit_env.reproduce import papers
    >>> [p.name for p in papers().values()]
    ['zhu', 'li_song', 'dubey', 'martinez_rubio']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedbandit_env.reproduce import register_paper

ZHU = {"quick": (20_000, 5), "paper": (1_000_000, 100)}
"""``(horizon, trials)`` of Zhu et al.'s rows: their T = 1e6 and 100 trials at ``paper``."""
LI_SONG = {"quick": (50_000, 4), "paper": (1_000_000, 20)}
"""``(horizon, trials)`` of Li & Song's rows (the paper states no T)."""
DUBEY = {"quick": "quick", "paper": "tenth"}
"""The scale of Dubey & Pentland's Fig. 1 (:data:`baselines.papers.dubey.SCALES`): at
``paper``, a tenth of the paper's horizon (about 17 CPU-hours: give ``fedbandit
reproduce`` a ``--store`` so that an interrupted run resumes and a finished one redraws
in seconds); ``examples/dubey_fig1.py --scale default`` is the former T = 5e3 report."""
MARTINEZ_RUBIO = {"quick": (10_000, 3), "paper": (10_000, 20)}
"""``(horizon, trials)`` of Martinez-Rubio et al.'s rows (their T = 1e4 at both scales:
a trial of 100 agents takes a fifth of a second)."""


def zhu_rows(scale: str, figures: Path) -> list[Any]:
    """Zhu et al.'s rows at a report scale."""
    from baselines.papers import zhu

    horizon, trials = ZHU[scale]
    return zhu.rows(horizon, trials, figures)


def li_song_rows(scale: str, figures: Path) -> list[Any]:
    """Li & Song's rows at a report scale."""
    from baselines.papers import li_song

    horizon, trials = LI_SONG[scale]
    return li_song.rows(horizon, trials, figures)


def dubey_rows(scale: str, figures: Path, store: Path | None = None, jobs: int = 1) -> list[Any]:
    """Dubey & Pentland's rows at a report scale (runs kept in ``store``, resumable)."""
    from baselines.papers import dubey

    return dubey.rows(DUBEY[scale], figures, run=dubey.Runner(store, jobs))


def martinez_rubio_rows(scale: str, figures: Path) -> list[Any]:
    """Martinez-Rubio et al.'s rows at a report scale."""
    from baselines.papers import martinez_rubio

    horizon, trials = MARTINEZ_RUBIO[scale]
    return martinez_rubio.rows(horizon, trials, figures)


def register_papers() -> None:
    """Register the papers with ``fedbandit reproduce`` (idempotent)."""
    register_paper(
        "zhu",
        "baselines.papers:zhu_rows",
        keys=(
            "zhu_fig2a_order",
            "zhu_fig2a_ratios",
            "zhu_fig2b_order",
            "zhu_fig2b_ratios",
            "zhu_fig2c_order",
            "zhu_fig2c_learns",
            "zhu_eq12_readings",
            "zhu_eq12_alpha_1",
            "zhu_alpha_1",
        ),
        scales={
            "quick": "Zhu et al. at T = 2e4 with 5 trials",
            "paper": "Zhu et al. at their T = 1e6 with their 100 trials",
        },
    )
    register_paper(
        "li_song",
        "baselines.papers:li_song_rows",
        keys=(
            "li_song_table1",
            "li_song_fig4",
            "li_song_fig5",
            "li_song_fig6",
            "li_song_fig10",
            "li_song_fig12",
            "li_song_table2_regret",
            "li_song_table2_cost",
        ),
        scales={
            "quick": "Li & Song at T = 5e4 with 4 trials",
            "paper": "Li & Song (who state no horizon) at T = 1e6 with 20 trials",
        },
    )
    register_paper(
        "dubey",
        "baselines.papers:dubey_rows",
        keys=("dubey_fig1a", "dubey_fig1a_corrected", "dubey_fig1b", "dubey_fig1c"),
        resumable=True,
        scales={
            "quick": "Dubey & Pentland at T = 300 (too small for the papers' claims: it "
            "checks that the report runs; `--scale paper` gives the numbers to read)",
            "paper": "Dubey & Pentland's Fig. 1 at a tenth of their horizon, T = 1e6 in (A) "
            "and (B) and 1e5 in (C) with 10 trials (theirs: T = 1e7, 100 trials; about 17 "
            "CPU-hours: run it with --store)",
        },
    )
    register_paper(
        "martinez_rubio",
        "baselines.papers:martinez_rubio_rows",
        keys=(
            "mr_dducb_cycle",
            "mr_dducb_plain_cycle",
            "mr_coop_ucb_cycle",
            "mr_dducb_beats_coop_ucb",
        ),
        scales={
            "quick": "Martinez-Rubio et al. at their T = 1e4 with 3 trials",
            "paper": "Martinez-Rubio et al. at their T = 1e4 with 20 trials (the authors' "
            "code: 10 seeds)",
        },
    )


__all__ = [
    "DUBEY",
    "LI_SONG",
    "MARTINEZ_RUBIO",
    "ZHU",
    "dubey_rows",
    "li_song_rows",
    "martinez_rubio_rows",
    "register_papers",
    "zhu_rows",
]
