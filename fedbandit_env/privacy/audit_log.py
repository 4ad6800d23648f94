"""The privacy audits' figures, generated: each audit test reports its bound here, and the
privacy page's tables are written from the log (``make privacy-numbers``), not typed.

:func:`report` prints the line ``AUDIT name: epsilon_lb=... claim=...`` every audit
test prints (``pytest ... -s | grep AUDIT``) and, when the environment variable
:data:`LOG_VARIABLE` names a file, appends the result to it as one JSON line. ``python
-m fedbandit_env.privacy.audit_log LOG --into docs/privacy.md`` writes the block
``privacy-audits`` of the page from that file: one row per audit, grouped by test
module, with the runs per input the bound was computed on (the part of the runs the
event was not chosen on), the lower bound, the claim and whether the bound lies
above it (a weakened variant caught) or not.

Examples:
    >>> from fedbandit_env.privacy.audit import AuditResult
    >>> rows = [record(AuditResult(0.3, 0.5, 0.4, 1000, event="x"), 1.0, "a", "t.py::a")]
    >>> print(markdown(rows).splitlines()[4])
    | `a` | 1,000 | 0.300 | 1 | no |
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedbandit_env.privacy.audit import AuditResult

LOG_VARIABLE = "FEDBANDIT_AUDIT_LOG"
"""The environment variable naming the file :func:`report` appends to."""
BLOCK = "privacy-audits"
"""The generated block of ``docs/privacy.md`` the log is written into."""


def _current_test() -> str:
    """The running pytest node id (``path::name[params]``), or ``"?"`` outside pytest."""
    return os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]


def record(result: AuditResult, claim: float, name: str, test: str) -> dict[str, Any]:
    """One audit as the log keeps it.

    Examples:
        >>> r = record(AuditResult(1.2, 0.5, 0.1, 300), 1.0, "half", "t.py::x")
        >>> r["caught"], r["trials"]
        (True, 300)
    """
    return {
        "test": test,
        "name": name,
        "epsilon_lb": float(result.epsilon_lb),
        "claim": float(claim),
        "trials": int(result.trials),
        "delta": float(result.delta),
        "event": result.event,
        "caught": bool(result.epsilon_lb > claim),
    }


def report(result: AuditResult, claim: float, name: str | None = None) -> dict[str, Any]:
    """Print the audit's line and, under :data:`LOG_VARIABLE`, append it to that file.

    ``name`` defaults to the running test's name with its parameters.

    Examples:
        >>> from fedbandit_env.privacy.audit import AuditResult
        >>> _ = report(AuditResult(0.5, 0.5, 0.4, 100, event="x"), 1.0, "demo")
        <BLANKLINE>
        AUDIT demo: epsilon_lb=0.500 claim=1.000 (x)
    """
    test = _current_test()
    label = name if name is not None else test.split("::")[-1]
    print(f"\nAUDIT {label}: epsilon_lb={result.epsilon_lb:.3f} claim={claim:.3f} ({result.event})")
    row = record(result, claim, label, test)
    path = os.environ.get(LOG_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(row) + "\n")
    return row


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """The records of a log, the last of each (test, name) kept (a rerun replaces).

    Raises:
        ValueError: If the log holds no record.
    """
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[(row["test"], row["name"])] = row
    if not rows:
        raise ValueError(f"{path}: no audit was recorded (run the audit tests with {LOG_VARIABLE})")
    return list(rows.values())


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The block: one table per test module, a row per audit in the order run.

    Examples:
        >>> from fedbandit_env.privacy.audit import AuditResult
        >>> rows = [record(AuditResult(2.0, 0.5, 0.1, 300), 1.0, "half", "t.py::x")]
        >>> "| `half` | 300 | 2.000 | 1 | **yes** |" in markdown(rows)
        True
    """
    out: list[str] = []
    for module in dict.fromkeys(r["test"].split("::")[0] for r in rows):
        out += [
            "",
            f"`{module}`",
            "",
            "| audit | runs per input bounding it | epsilon lower bound | claim | above claim |",
            "|---|---|---|---|---|",
        ]
        for r in rows:
            if r["test"].split("::")[0] == module:
                above = "**yes**" if r["caught"] else "no"
                out.append(
                    f"| `{r['name']}` | {r['trials']:,} | {r['epsilon_lb']:.3f} | "
                    f"{r['claim']:g} | {above} |"
                )
    return "\n".join(out[1:]) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m fedbandit_env.privacy.audit_log LOG --into PAGE``."""
    from fedbandit_env.files import replace_block, write_text_atomic

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help=f"the file {LOG_VARIABLE} named")
    parser.add_argument("--into", type=Path, required=True, metavar="PAGE")
    args = parser.parse_args(argv)
    try:
        page = replace_block(
            args.into.read_text(encoding="utf-8"), BLOCK, markdown(read_log(args.log))
        )
        write_text_atomic(args.into, page)
    except (OSError, ValueError) as err:  # one line, not a traceback
        raise SystemExit(f"audit_log: {err}") from None
    print(f"wrote the block {BLOCK!r} of {args.into}")


__all__ = ["BLOCK", "LOG_VARIABLE", "main", "markdown", "read_log", "record", "report"]

if __name__ == "__main__":  # pragma: no cover
    main()
