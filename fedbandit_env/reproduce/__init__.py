"""``fedbandit reproduce``: one report for every figure and table of the registered papers.

The papers live where their algorithms live (``baselines/papers/``: Zhu et al., Li &
Song, Dubey & Pentland) and are registered like policies, in the plugin entry point
group ``fedbandit_env.policies`` (:func:`register_paper`): each turns its figures into
:class:`~fedbandit_env.reproduce.core.Row` objects (claim, our numbers with 95%
intervals, verdict, why). :func:`reproduce` runs them at a scale and writes
``reproduction.md`` with its figures. The core names no paper and no policy.

Examples:
    >>> scale_names()
    ('quick', 'paper')
    >>> len(row_keys()) == sum(len(p.keys) for p in papers().values())
    True
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path

from fedbandit_env.entry_points import EntryPoint, load_entry_point
from fedbandit_env.reproduce.core import VERDICTS, Row


@dataclass(frozen=True)
class Paper:
    """A paper whose claims ``fedbandit reproduce`` measures.

    Attributes:
        name: Its short name (``--papers``), e.g. ``"zhu"``.
        entry_point: ``(scale, figures) -> list[Row]`` (or ``"module:attr"``): measure
            every row at ``scale``, drawing figures into the folder ``figures``.
        keys: The keys of its rows, in report order.
        scales: Scale name -> one sentence for the report (what that scale runs).
        resumable: Its entry point also takes ``store`` (a folder where finished runs
            are kept, so an interrupted scale resumes; None: keep nothing) and ``jobs``
            (worker processes) as keywords.

    Examples:
        >>> Paper("p", lambda scale, figures: [], ("p_fig1",), {"quick": "p at T = 10"}).keys
        ('p_fig1',)
    """

    name: str
    entry_point: EntryPoint
    keys: tuple[str, ...]
    scales: Mapping[str, str] = field(default_factory=dict)
    resumable: bool = False

    def __post_init__(self) -> None:
        if not (callable(self.entry_point) or isinstance(self.entry_point, str)):
            raise TypeError(f"entry_point of paper {self.name!r} must be callable or 'module:attr'")
        if not self.keys or not self.scales:
            raise ValueError(f"paper {self.name!r} needs row keys and at least one scale")
        object.__setattr__(self, "keys", tuple(self.keys))
        object.__setattr__(self, "scales", dict(self.scales))

    def rows(
        self, scale: str, figures: Path, store: Path | None = None, jobs: int = 1
    ) -> list[Row]:
        """Measure every row of this paper at ``scale`` (``store``, ``jobs``: for a
        resumable paper; the others run in this process and keep nothing)."""
        measure: Callable[..., list[Row]] = load_entry_point(
            self.entry_point, f"entry point of paper {self.name!r}"
        )
        if self.resumable:
            return list(measure(scale, figures, store=store, jobs=jobs))
        return list(measure(scale, figures))


_papers: dict[str, Paper] = {}


def register_paper(
    name: str,
    entry_point: EntryPoint,
    *,
    keys: tuple[str, ...],
    scales: Mapping[str, str],
    resumable: bool = False,
) -> Paper:
    """Register a paper for ``fedbandit reproduce`` (again under the same name: replaced).

    Examples:
        >>> p = register_paper("toy", lambda s, f: [], keys=("toy_a",), scales={"quick": "toy"})
        >>> "toy" in papers()
        True
        >>> deregister_paper("toy")
    """
    paper = Paper(name, entry_point, keys, scales, resumable)
    _papers[name] = paper
    return paper


def deregister_paper(name: str) -> None:
    """Remove a registered paper (tests, notebooks)."""
    if name not in _papers:
        raise ValueError(f"paper {name!r} is not registered")
    del _papers[name]


def papers() -> dict[str, Paper]:
    """The registered papers, in registration order (plugins loaded first).

    Examples:
        >>> list(papers())
        ['zhu', 'li_song', 'dubey', 'martinez_rubio']
    """
    from fedbandit_env.registry import policy_ids

    policy_ids()  # loads the plugins, which register their papers too
    return dict(_papers)


def row_keys(names: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Every row key of the papers ``names`` (default: all), in report order."""
    known = papers()
    return tuple(k for n in (names or tuple(known)) for k in known[n].keys)


def scale_names() -> tuple[str, ...]:
    """The scales any registered paper offers, in order of first appearance."""
    return tuple(dict.fromkeys(s for p in papers().values() for s in p.scales))


def _selected(papers_: tuple[str, ...] | None) -> list[Paper]:
    known = papers()
    names = tuple(papers_) if papers_ else tuple(known)
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise ValueError(f"papers must be among {tuple(known)}, got {unknown}")
    return [known[n] for n in names]


def run_rows(
    scale: str,
    figures: Path,
    papers_: tuple[str, ...] | None = None,
    store: Path | None = None,
    jobs: int = 1,
) -> list[Row]:
    """Measure every row of the papers ``papers_`` (default: all) at ``scale``, drawing
    figures into ``figures`` (``store``, ``jobs``: see :class:`Paper`)."""
    chosen = _selected(papers_)
    missing = [p.name for p in chosen if scale not in p.scales]
    if missing:
        raise ValueError(f"scale must be one of {scale_names()}, got {scale!r} (for {missing})")
    figures.mkdir(parents=True, exist_ok=True)
    found: list[Row] = []
    for paper in chosen:
        start = time.perf_counter()
        rows = paper.rows(scale, figures, store, jobs)
        took = time.perf_counter() - start
        for r in rows:  # a row read back from a store keeps the compute its trials took
            r.seconds = max(r.seconds, took / len(rows))
        print(f"fedbandit: {paper.name}: {len(rows)} rows in {took:.0f} s", flush=True)
        found += rows
    return found


def scale_text(scale: str, papers_: tuple[str, ...] | None = None) -> str:
    """The report's sentence on what ``scale`` runs, from each paper's registration."""
    parts = [p.scales[scale] for p in _selected(papers_) if scale in p.scales]
    return f"Scale `{scale}`: " + "; ".join(parts) + "."


def _duration(seconds: float) -> str:
    """``"22.5 minutes"``, or hours past two of them."""
    return f"{seconds / 60:.1f} minutes" if seconds < 7200 else f"{seconds / 3600:.1f} hours"


def markdown(
    rows: list[Row],
    scale: str,
    seconds: float,
    figures: str,
    papers_: tuple[str, ...] | None = None,
    kept: tuple[str, ...] = (),
) -> str:
    """The report: a summary table, then one section per row with its figure (``papers_``:
    the papers measured, for the sentence on the scale; default all; ``kept``: papers
    whose rows come from the previous report, named in the header)."""
    from fedbandit_env.files import package_versions

    versions = ", ".join(f"{k} {v}" for k, v in package_versions().items())
    counts = {v: sum(r.verdict == v for r in rows) for v in VERDICTS}
    lines = [
        "# Reproduction report",
        "",
        f"Generated by `fedbandit reproduce --scale {scale}` on {date.today().isoformat()} "
        f"in {_duration(seconds)} of compute on this machine ({versions}). Do not edit by "
        "hand: rerun the command. Rows whose trials were read back from a store "
        "(`--store`) count the time those trials took when they ran."
        + (
            f" The rows of {', '.join(kept)} were kept from the previous report at this "
            "scale (`--papers` regenerated the others); the time is every row's own."
            if kept
            else ""
        ),
        "",
        scale_text(scale, papers_),
        "",
        "Verdicts: **reproduced** (every part of the claim confirmed: the 95% bootstrap "
        "interval of each difference over trials lies on the claimed side), **partly**, "
        "**not reproduced** (within noise or contradicted; the row says why), **exact** "
        "(a count that matches a formula), **reading decided** (the paper can be read two "
        "ways; the measurements chose); *(unstable)* where the two halves of the trials "
        "(even- and odd-numbered) do not both give the verdict. Totals: "
        + ", ".join(f"{n} {v}" for v, n in counts.items() if n)
        + f"; {sum(r.unstable for r in rows)} of them unstable.",
        "",
        "| paper | item | claim | verdict |",
        "|---|---|---|---|",
    ]
    for r in rows:
        mark = " (unstable)" if r.unstable else ""
        lines.append(f"| {r.paper} | [{r.item}](#{r.key}) | {r.claim} | **{r.verdict}**{mark} |")
    for r in rows:
        lines += [
            "",
            f'<a id="{r.key}"></a>',
            f"## {r.paper}, {r.item}: {r.verdict}",
            "",
            f"- **Claim**: {r.claim}",
            f"- **Setting**: {r.setting}",
            "- **Measured** (mean [95% CI] over trials):",
            *(f"  - {part}" for part in r.measured.split("<br>")),
            f"- **Why**: {r.why}",
        ]
        if r.stability:
            lines.append(f"- **Stability**: {r.stability}")
        if r.figure:
            lines += ["", f"![{r.item}]({figures}/{r.figure})"]
    return "\n".join(lines) + "\n"


def reproduce(
    scale: str = "quick",
    out: Path = Path("results/reproduce"),
    papers_: tuple[str, ...] | None = None,
    store: Path | None = None,
    jobs: int = 1,
) -> Path:
    """Run every row at ``scale``; write ``out/reproduction.md``, its figures under
    ``out/figures/reproduction/`` and ``rows.json`` beside them. Returns the report's path.
    ``store``: keep the finished runs of resumable papers there, and reuse them (an
    interrupted long scale resumes); ``jobs``: their worker processes.

    With ``papers_`` naming some papers, a report already in ``out`` at the same scale
    keeps the other papers' rows (and their figures): regenerating one paper never
    drops the rest.
    """
    from fedbandit_env.files import write_text_atomic

    figures = out / "figures" / "reproduction"
    report = out / "reproduction.md"
    start = time.perf_counter()
    rows = run_rows(scale, figures, papers_, store, jobs)
    seconds = time.perf_counter() - start
    kept: tuple[str, ...] = ()
    earlier = figures / "rows.json"
    same_scale = report.is_file() and f"reproduce --scale {scale}`" in report.read_text()
    if papers_ and same_scale and earlier.is_file():
        others = tuple(p for p in papers() if p not in papers_)
        keys = set(row_keys(others))
        old = [Row(**r) for r in json.loads(earlier.read_text()) if r["key"] in keys]
        if old:
            kept = tuple(p for p in others if set(row_keys((p,))) & {r.key for r in old})
            order = {k: i for i, k in enumerate(row_keys())}
            rows = sorted(old + rows, key=lambda r: order.get(r.key, len(order)))
            seconds = sum(r.seconds for r in rows)
            papers_ = None
    write_text_atomic(figures / "rows.json",
                      json.dumps([asdict(r) for r in rows], indent=1))  # fmt: skip
    text = markdown(rows, scale, seconds, "figures/reproduction", papers_, kept)
    write_text_atomic(report, text)
    return report


__all__ = [
    "Paper",
    "Row",
    "deregister_paper",
    "markdown",
    "papers",
    "register_paper",
    "reproduce",
    "row_keys",
    "run_rows",
    "scale_names",
    "scale_text",
]
