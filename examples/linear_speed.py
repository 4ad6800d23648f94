"""How fast is the linear family's fast path? Agent-steps per second at Dubey & Pentland's
scale (d = 10, K = 100 vectors a set, M = 100 agents), measured in one run against two
NumPy implementations of the same policy: the batched one (``baselines.linear.batched``:
every agent's ``V^-1`` in one stack, Sherman-Morrison, batched ``matmul``; the
yardstick, tested to make the fast path's choices) and the per-agent loop of
``baselines.linear.naive`` (``np.linalg.inv`` per step). Best of five alternating runs
of each, single-threaded (numba's and BLAS's threads set to 1). Machines differ; the
ratios are what to compare.

The share of the FMA peak counts the multiply-adds a step needs (scoring a set: ``K (d
(d + 1) / 2 + d)``; ``theta`` and the rank-one update: ``3 d^2``) against one core's
float32 peak *assumed* as two 256-bit FMA pipes (16 a cycle) at the clock
``/proc/cpuinfo`` reports (3 GHz where it says nothing): a yardstick, not a datasheet.

    python examples/linear_speed.py            # about a minute on 2 cores
    python examples/linear_speed.py --quick    # M = 20
    python examples/linear_speed.py --into docs/guides/linear.md   # the guide's table

``--into PAGE`` also writes the run's table, with its conditions, into the page's
generated block ``linear-speed`` (``make docs-numbers`` does, for the linear guide).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one thread, before NumPy and numba load

from baselines.linear.batched import batched_trial  # noqa: E402
from baselines.linear.naive import naive_trial  # noqa: E402
from fedbandit_env.files import measured_line, replace_block, write_text_atomic  # noqa: E402
from fedbandit_env.runner.fast import run_fast  # noqa: E402
from fedbandit_env.scenario import Scenario  # noqa: E402

FMA_PER_CYCLE = 16  # float32: two 256-bit FMA pipes


def clock_ghz() -> float:
    """The first core's clock from ``/proc/cpuinfo`` in GHz (3.0 where it is absent).

    Examples:
        >>> clock_ghz() > 0
        True
    """
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("cpu mhz"):
                return float(line.split(":")[1]) / 1000.0
    except (OSError, ValueError, IndexError):
        pass
    return 3.0


def fma_per_step(dim: int, set_size: int) -> int:
    """Multiply-adds one agent-step of LinUCB needs: the set's scores and the statistics.

    Examples:
        >>> fma_per_step(10, 100)
        6800
    """
    return set_size * (dim * (dim + 1) // 2 + dim) + 3 * dim * dim


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Print and return agent-steps per second of each path and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="M = 20 agents, shorter runs")
    parser.add_argument(
        "--into", type=Path, default=None, metavar="PAGE",
        help="also write the table into PAGE's generated block 'linear-speed'",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.into is not None:  # before a minute of measuring: a page without the block
        replace_block(args.into.read_text(encoding="utf-8"), "linear-speed", "")
    agents, dim, set_size = (20 if args.quick else 100), 10, 100
    fast_t, batched_t, naive_t = (2000, 200, 50) if args.quick else (3000, 300, 100)
    peak = FMA_PER_CYCLE * clock_ghz() * 1e9
    print(
        f"d={dim} K={set_size} M={agents}, one thread; FMA peak assumed "
        f"{peak / 1e9:.0f} G/s ({FMA_PER_CYCLE} float32 a cycle at {clock_ghz():.2f} GHz)"
    )
    out: dict[str, float] = {}
    for pid, batch in (("lin_ucb", None), ("fedlin_ucb_fixed", 50)):
        scenario = Scenario(
            n_agents=agents, n_arms=set_size, instance="dubey", dim=dim, horizon=fast_t, seed=1
        )
        problem = scenario.problem()
        kwargs = {"batch": batch} if batch else {}
        run_fast(pid, scenario, 1, record_every=fast_t, progress=False, **kwargs)  # compile
        times: dict[str, list[float]] = {"fast": [], "batched": [], "naive": []}
        for _ in range(5):  # best of five, alternating: the machine is shared and noisy
            start = time.perf_counter()
            run_fast(pid, scenario, 1, seed=1, record_every=fast_t, progress=False, **kwargs)
            times["fast"].append(time.perf_counter() - start)
            start = time.perf_counter()
            batched_trial(problem, batched_t, env_seed=1, batch=batch)
            times["batched"].append(time.perf_counter() - start)
            start = time.perf_counter()
            naive_trial(problem, naive_t, env_seed=1, batch=batch)
            times["naive"].append(time.perf_counter() - start)
        steps = {"fast": fast_t, "batched": batched_t, "naive": naive_t}
        rate = {k: agents * steps[k] / min(v) for k, v in times.items()}
        share = rate["fast"] * fma_per_step(dim, set_size) / peak
        for k, v in rate.items():
            out[f"{pid} {k}"] = v
        out[f"{pid} fma share"] = share
        print(
            f"{pid:<17} fast path {rate['fast']:>10,.0f} agent-steps/s | "
            f"batched NumPy {rate['batched']:>8,.0f} ({rate['fast'] / rate['batched']:4.1f}x) | "
            f"per-agent NumPy {rate['naive']:>7,.0f} ({rate['fast'] / rate['naive']:5.1f}x) | "
            f"{share:6.1%} of the FMA peak"
        )
    if args.into is not None:
        page = replace_block(args.into.read_text(encoding="utf-8"), "linear-speed",
                             markdown(out, agents, dim, set_size))  # fmt: skip
        write_text_atomic(args.into, page)
        print(f"wrote the block 'linear-speed' of {args.into}")
    return out


def markdown(out: dict[str, float], agents: int, dim: int, set_size: int) -> str:
    """The measured rates and ratios as a Markdown table, with the run's conditions.

    Examples:
        >>> rates = {"fast": 8e5, "batched": 1e5, "naive": 1e4, "fma share": 0.25}
        >>> out = {f"{p} {k}": v for p in ("lin_ucb", "fedlin_ucb_fixed")
        ...        for k, v in rates.items()}
        >>> markdown(out, 100, 10, 100).splitlines()[4]
        '| `lin_ucb` | 800,000 | 100,000 | 8.0x | 10,000 | 80x | 25% |'
    """
    rows = [
        f"`python examples/linear_speed.py`: d = {dim}, K = {set_size}, M = {agents}, one "
        "thread, best of five alternating runs of each path, in one run. The batched "
        "NumPy's own rate moves by much between runs on a shared machine: read the ratio "
        "over several.",
        "",
        "| policy | fast path (agent-steps/s) | batched NumPy | ratio | per-agent NumPy "
        "| ratio | FMA peak |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for pid in ("lin_ucb", "fedlin_ucb_fixed"):
        fast, batched, naive = (out[f"{pid} {k}"] for k in ("fast", "batched", "naive"))
        rows.append(
            f"| `{pid}` | {fast:,.0f} | {batched:,.0f} | {fast / batched:.1f}x | "
            f"{naive:,.0f} | {fast / naive:.0f}x | {out[f'{pid} fma share']:.0%} |"
        )
    return "\n".join([*rows, "", measured_line(), ""])


if __name__ == "__main__":
    main()
