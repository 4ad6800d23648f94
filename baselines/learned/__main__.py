"""``python -m baselines.learned export MODEL NAME``: ship a trained posterior net.

Writes ``baselines/learned/models/NAME.npz`` (the network's arrays) and ``NAME.json``
(the model's ``train.json`` record and stack), the files ``baselines.registration``
registers a learned reference from.

Example::

    fedbandit train ppo --net posterior --reward team --setting neighbours \\
        --timesteps 100000000 --checkpoints 20 --out runs/learned_neighbours
    python -m baselines.learned export runs/learned_neighbours/model.zip learned_neighbours
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from baselines.learned import MODELS, export_model


def main(argv: list[str] | None = None) -> int:
    """Parse and run; returns the exit status (2 with a one-line error).

    Examples:
        >>> main(["export", "/no/such/model.zip", "learned_x"])
        error: no saved model at '/no/such/model.zip'
        2
    """
    parser = argparse.ArgumentParser(prog="python -m baselines.learned")
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="ship a trained posterior net's weights")
    export.add_argument("model", help="the model.zip fedbandit train --net posterior wrote")
    export.add_argument("name", help="the reference's id (learned_...)")
    export.add_argument("--folder", type=Path, default=MODELS, help="where to write")
    export.add_argument(
        "--command", default="", help="the command that trained it (kept in the record)"
    )
    args = parser.parse_args(argv)
    try:
        if not args.name.startswith("learned_"):
            raise ValueError(f"a learned reference's id starts with 'learned_', got {args.name!r}")
        record_path = Path(args.model).with_name("train.json")
        record = json.loads(record_path.read_text()) if record_path.is_file() else {}
        record.pop("stack", None)
        if args.command:
            record = {"command": args.command, **record}
        path = export_model(args.model, args.name, record, args.folder)
    except (ValueError, OSError, RuntimeError) as err:  # RuntimeError: torch cannot load it
        print(f"error: {err}")
        return 2
    print(f"wrote {path} and {path.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
