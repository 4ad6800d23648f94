"""Files that survive faults: atomic writes, an output folder checked before computing,
the package versions a result was produced with.

A result file is written to a temporary file in its own folder and renamed over the
target (``os.replace`` is atomic on POSIX and Windows), so a crash or a kill at any
moment leaves either the old file or the new one, never half of one. Commands check
their output folder is writable *before* they compute anything
(:func:`check_writable`), so a typo in ``--out`` costs a second, not the run.

Examples:
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "a.txt"
    >>> with atomic_path(path) as tmp:
    ...     _ = tmp.write_text("done")
    >>> path.read_text(), sorted(p.name for p in path.parent.iterdir())
    ('done', ['a.txt'])
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = (
    "fedbandit_env",
    "numpy",
    "numba",
    "pettingzoo",
    "gymnasium",
    "torch",
    "stable-baselines3",
)
"""The packages whose versions every ``config.json`` records."""


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix, so writers that read the format
    from it still work); renamed over ``path`` when the block ends without an error,
    removed otherwise. The folder is created if needed. The file gets the permissions a
    plain ``open`` would give it (``0666`` less the umask; an existing file's own), not
    ``mkstemp``'s private ``0600``.

    Examples:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "x.csv"
        >>> try:
        ...     with atomic_path(target) as tmp:
        ...         _ = tmp.write_text("half")
        ...         raise KeyboardInterrupt
        ... except KeyboardInterrupt:
        ...     pass
        >>> target.exists(), list(target.parent.iterdir())
        (False, [])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, _usual_mode(path))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _usual_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` would leave: the existing file's, else ``0666`` less
    the process's umask."""
    if path.exists():
        return path.stat().st_mode & 0o777
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def strict_json(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` that writes valid JSON: ``NaN`` becomes ``null``, an infinity the
    string ``"inf"`` or ``"-inf"`` (Python's default writes ``NaN`` and ``Infinity``,
    which jq, JavaScript and most readers refuse); other objects go through ``str``.

    Examples:
        >>> strict_json({"a": float("nan"), "b": [float("inf"), 1.5]})
        '{"a": null, "b": ["inf", 1.5]}'
    """

    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [clean(v) for v in x]
        if hasattr(x, "item") and callable(x.item) and getattr(x, "ndim", 1) == 0:
            return clean(x.item())  # numpy scalars
        return x

    return json.dumps(clean(obj), allow_nan=False, default=str, **kwargs)


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically; return ``path``.

    Examples:
        >>> import tempfile
        >>> write_text_atomic(Path(tempfile.mkdtemp()) / "n.txt", "1").read_text()
        '1'
    """
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return path


def check_writable(folder: str | Path, option: str = "--out") -> Path:
    """Create ``folder`` if needed and check a file can be written in it.

    Raises:
        ValueError: Naming ``option`` and the folder, with the reason, if not.

    Examples:
        >>> check_writable("/proc/nope")
        Traceback (most recent call last):
        ...
        ValueError: --out /proc/nope: cannot write there (No such file or directory)
    """
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".fedbandit-check-", dir=path)
        os.close(fd)
        os.unlink(name)
    except OSError as err:
        raise ValueError(f"{option} {folder}: cannot write there ({err.strerror})") from None
    return path


def check_page(path: str | Path, option: str = "--markdown") -> Path:
    """Check, before the work that fills it, that a page can be written at ``path``: not a
    folder, its folder writable (created if needed).

    Raises:
        ValueError: Naming ``option`` and the path, with the reason, if not.

    Examples:
        >>> import tempfile
        >>> check_page(tempfile.mkdtemp())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: --markdown ...: a folder, not a page to write
    """
    page = Path(path)
    if page.is_dir():
        raise ValueError(f"{option} {path}: a folder, not a page to write")
    check_writable(page.parent if str(page.parent) else Path("."), option)
    return page


def package_versions() -> dict[str, str]:
    """The installed version of each of :data:`PACKAGES` (``"absent"`` if not installed).

    Examples:
        >>> sorted(package_versions())[:2]
        ['fedbandit_env', 'gymnasium']
    """
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def measured_line() -> str:
    """A generated page's conditions line: when (UTC), the cores, Python and the
    packages' versions.

    Examples:
        >>> measured_line().startswith("- measured: ")
        True
    """
    import datetime
    import platform

    versions = ", ".join(f"{k} {v}" for k, v in sorted(package_versions().items()))
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"- measured: {when}; {os.cpu_count() or 1} cores; Python "
        f"{platform.python_version()}; {versions}"
    )


def block_markers(name: str) -> tuple[str, str]:
    """The two comment lines around a generated block of a Markdown page; the first names
    the Makefile target that regenerates it (``make learned-numbers`` for the
    ``learned-*`` blocks, ``make privacy-numbers`` for the ``privacy-*`` ones, ``make
    references-numbers`` for the ``references-*`` ones, ``make docs-numbers`` for the
    others).

    Examples:
        >>> block_markers("default-bench")[0]
        '<!-- generated: default-bench (make docs-numbers); edit the command, not the text -->'
        >>> block_markers("learned-gossip")[0][:50]
        '<!-- generated: learned-gossip (make learned-numbe'
    """
    target = "docs-numbers"
    for prefix in ("learned", "privacy", "references"):
        if name.startswith(f"{prefix}-"):
            target = f"{prefix}-numbers"
    return (
        f"<!-- generated: {name} (make {target}); edit the command, not the text -->",
        f"<!-- end generated: {name} -->",
    )


def _block_span(lines: list[str], name: str) -> tuple[int, int]:
    """The line numbers of ``name``'s two markers in ``lines``."""
    start, end = block_markers(name)
    starts = [i for i, line in enumerate(lines) if line.strip() == start]
    ends = [i for i, line in enumerate(lines) if line.strip() == end]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(
            f"the page must hold the generated block {name!r} once, between the lines "
            f"{start!r} and {end!r}"
        )
    return starts[0], ends[0]


def replace_block(text: str, name: str, body: str) -> str:
    r"""``text`` with the lines between ``name``'s :func:`block_markers` replaced by
    ``body``; the markers stay, so the block can be generated again.

    Raises:
        ValueError: If the page does not hold the block exactly once.

    Examples:
        >>> start, end = block_markers("b")
        >>> page = f"intro\n{start}\nold\n{end}\nafter\n"
        >>> replace_block(page, "b", "new").splitlines()[2]
        'new'
    """
    lines = text.splitlines(keepends=True)
    first, last = _block_span(lines, name)
    body = body if body.endswith("\n") else body + "\n"
    return "".join(lines[: first + 1]) + body + "".join(lines[last:])


def read_block(text: str, name: str) -> str:
    r"""The text of ``name``'s generated block in ``text`` (without its markers).

    Raises:
        ValueError: If the page does not hold the block exactly once.

    Examples:
        >>> start, end = block_markers("b")
        >>> read_block(f"{start}\n| a |\n{end}\n", "b")
        '| a |\n'
    """
    lines = text.splitlines(keepends=True)
    first, last = _block_span(lines, name)
    return "".join(lines[first + 1 : last])


__all__ = [
    "PACKAGES",
    "atomic_path",
    "block_markers",
    "check_writable",
    "measured_line",
    "package_versions",
    "read_block",
    "replace_block",
    "strict_json",
    "write_text_atomic",
]
