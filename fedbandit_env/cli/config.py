"""``--config FILE.toml``: the options of ``bench`` and ``sweep`` from a TOML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def config_args(path: Path) -> list[str]:
    """Bench options from a TOML file as command-line tokens: keys are option names
    (``horizon``, ``conflict-fraction`` or ``conflict_fraction``), lists become comma
    lists, ``true`` switches a flag on. Placed before the command line's own options, so
    those win; argparse refuses unknown names.

    Examples:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / "s.toml"
        >>> _ = f.write_text('policies = ["cdp_mab", "local_ucb"]\\nno_plot = true\\n')
        >>> config_args(f)
        ['--policies', 'cdp_mab,local_ucb', '--no-plot']
    """
    import tomllib

    try:
        raw = tomllib.loads(Path(path).read_text())
    except FileNotFoundError as err:
        raise ValueError(f"no config file at {str(path)!r}") from err
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"config {str(path)!r} is not valid TOML: {err}") from err
    tokens: list[str] = []
    for key, value in raw.items():
        option = "--" + key.replace("_", "-")
        if isinstance(value, dict):
            if key != "grid":
                raise ValueError(f"config {str(path)!r}: unknown table [{key}] (only [grid])")
            for axis, values in value.items():
                sep = "/" if axis == "components" else ","
                items = values if isinstance(values, list) else [values]
                tokens += ["--grid", f"{axis}={sep.join(_config_value(v) for v in items)}"]
        elif isinstance(value, bool):
            tokens += [option] if value else []
        elif isinstance(value, list):
            tokens += [option, ",".join(str(v) for v in value)]
        else:
            tokens += [option, str(value)]
    return tokens


def _config_value(value: Any) -> str:
    """A TOML value as an option value: lists become comma lists."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


__all__ = ["config_args"]
