"""Where a vector form's compiled step spends its time, by numba function and by
instruction, with Linux ``perf`` (issue 62's gates: which part of a family's step, or of
the core's rollout, to cut).

The script plays a family's vector form on ``examples/vector_gate.py``'s grid (its
``--policy`` and ``--size``), once to compile or load it and then ``--repeats`` times
more, and writes ``/tmp/perf-<pid>.map``: the address, length and name of every function
numba holds in the process, which is how ``perf report`` names code compiled at run time.
``--dump NAME`` also writes the machine code of the function whose name holds ``NAME``,
to read beside ``perf script``'s addresses::

    perf record -o perf.data python examples/kernel_profile.py --policy gossip_ucb --size big
    perf report -i perf.data --no-children --sort symbol     # the share of each function
    python examples/kernel_profile.py --size big --dump gossip_step   # prints the address
    objdump -D -b binary -mi386:x86-64 --adjust-vma=0xADDRESS gossip_step.bin

A function's length in the map is the distance to the next function numba holds (numba
does not report lengths), so a sample that falls past a function's end counts for it.
With ``perf`` not installed the script still runs and writes the map. What it found for
Gossip_UCB (N = 50, M = 100): 89% of the vector form's compiled time in the step, 36% of
that in the lazy argmax's pass over the bounds, the loops reloading spilled registers on
every arm; its fix is in ``baselines/gossip/kernels.py`` (``lazy_argmax``). Shares of
samples move by about 15% between runs of the same code on a shared machine: compare
shares within one run (a function's samples over the core's rollout's), not across runs.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from numba.core.dispatcher import Dispatcher

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vector_gate import SIZES, VECTOR_FORMS, gate_scenario, timed

from fedbandit_env import registry
from fedbandit_env.runner.vector_trials import CompiledTrials


def compiled_functions() -> dict[int, str]:
    """The entry address and symbol of every function numba holds in this process (each
    compiled or cache-loaded overload of every dispatcher), by address.

    Examples:
        >>> from numba import njit
        >>> twice = njit(lambda x: 2 * x)
        >>> twice(1)
        2
        >>> any("lambda" in name for name in compiled_functions().values())
        True
    """
    found: dict[int, str] = {}
    for obj in gc.get_objects():
        try:
            if not isinstance(obj, Dispatcher):
                continue
        except ReferenceError:  # a weak proxy whose object is gone
            continue
        for cres in obj.overloads.values():
            name = cres.fndesc.llvm_func_name
            try:
                address = cres.library.get_pointer_to_function(name)
            except Exception:  # a library numba has dropped
                continue
            if address:
                found[int(address)] = name
    return found


def write_perf_map(path: Path | None = None, cap: int = 1 << 18) -> dict[int, tuple[int, str]]:
    """Write ``perf``'s map of the functions numba holds (``path``, by default
    ``/tmp/perf-<pid>.map``): each as ``address length name`` in hex, its length the
    distance to the next (at most ``cap`` bytes). Returns the entries by address.

    Examples:
        >>> import tempfile
        >>> from numba import njit
        >>> plus = njit(lambda x: x + 1)  # kept: a dispatcher gone holds nothing
        >>> plus(1)
        2
        >>> out = Path(tempfile.mkdtemp()) / "perf.map"
        >>> entries = write_perf_map(out)
        >>> len(out.read_text().splitlines()) == len(entries) > 0
        True
    """
    path = path or Path(f"/tmp/perf-{os.getpid()}.map")
    found = sorted(compiled_functions().items())
    ends = [a for a, _ in found[1:]] + [found[-1][0] + cap] if found else []
    entries = {a: (min(end - a, cap), name) for (a, name), end in zip(found, ends, strict=True)}
    path.write_text("".join(f"{a:x} {size:x} {name}\n" for a, (size, name) in entries.items()))
    return entries


def dump_function(entries: dict[int, tuple[int, str]], part: str, out: Path) -> int:
    """Write the machine code of the first mapped function whose symbol holds ``part``
    (its map length of bytes) to ``out``; returns its address (0: none matched).

    Examples:
        >>> import tempfile
        >>> from numba import njit
        >>> minus = njit(lambda x: x - 1)
        >>> minus(1)
        0
        >>> out = Path(tempfile.mkdtemp()) / "f.bin"
        >>> dump_function(write_perf_map(out.with_suffix(".map")), "lambda", out) > 0
        True
        >>> out.stat().st_size > 0
        True
    """
    import ctypes

    for address, (size, name) in entries.items():
        if part in name and not name.startswith(("_ZN7cpython", "cfunc")):
            out.write_bytes(ctypes.string_at(address, size))
            return address
    return 0


def main(argv: list[str] | None = None) -> dict[int, tuple[int, str]]:
    """Play the vector form, write the map (and the dump); returns the map's entries."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policy", choices=sorted(VECTOR_FORMS), default="gossip_ucb")
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--horizon", type=int, default=0, help="0: the size's default")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--map", type=Path, default=None, help="default /tmp/perf-<pid>.map")
    parser.add_argument("--dump", default="", help="a function's name, or part of it")
    args = parser.parse_args(argv)
    scenario, factory = gate_scenario(args.policy, args.size, args.horizon)
    runner = replace(registry.spec(args.policy), fast_entry_point=CompiledTrials(factory))
    timed(runner, scenario, args.trials, 1)  # compile or load the caches
    where = args.map or Path(f"/tmp/perf-{os.getpid()}.map")
    entries = write_perf_map(where)
    print(f"{len(entries)} compiled functions mapped in {where}")
    if args.dump:
        out = Path(f"{args.dump}.bin")
        address = dump_function(entries, args.dump, out)
        print(f"{out}: {args.dump} at 0x{address:x}" if address else f"no function {args.dump!r}")
    begin = time.perf_counter()
    for _ in range(args.repeats):
        timed(runner, scenario, args.trials, 1)
    print(f"{args.policy}, {args.size}: {args.repeats} runs of {args.trials} trials in "
          f"{time.perf_counter() - begin:.2f} s")  # fmt: skip
    return entries


if __name__ == "__main__":
    main()
