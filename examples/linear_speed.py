"""How fast is the linear family's fast path? Agent-steps per second at Dubey & Pentland's
scale (d = 10, K = 100 vectors a set, M = 100 agents), measured in one run against a
straightforward NumPy implementation of the same policy (``baselines.linear.naive``: a
per-agent loop, ``np.linalg.inv`` per step), with the ratio: the best of three
alternating runs of each, single-threaded. Machines differ; the ratio is what to compare.

    python examples/linear_speed.py            # about 40 s on 2 cores
    python examples/linear_speed.py --quick    # M = 20
"""

from __future__ import annotations

import argparse
import time

from baselines.linear.naive import naive_trial
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.scenario import Scenario


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Print and return agent-steps per second of each path and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="M = 20 agents, shorter runs")
    args = parser.parse_args(argv)
    agents = 20 if args.quick else 100
    fast_t, naive_t = (2000, 100) if args.quick else (3000, 100)
    out: dict[str, float] = {}
    for pid, batch in (("lin_ucb", None), ("fedlin_ucb_fixed", 50)):
        scenario = Scenario(
            n_agents=agents, n_arms=100, instance="dubey", dim=10, horizon=fast_t, seed=1
        )
        kwargs = {"batch": batch} if batch else {}
        run_fast(pid, scenario, 1, record_every=fast_t, progress=False, **kwargs)  # compile
        fast_s, naive_s = [], []
        for _ in range(3):  # best of three, alternating: the machine is shared and noisy
            start = time.perf_counter()
            run_fast(pid, scenario, 1, seed=1, record_every=fast_t, progress=False, **kwargs)
            fast_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            naive_trial(scenario.problem(), naive_t, env_seed=1, batch=batch)
            naive_s.append(time.perf_counter() - start)
        fast = agents * fast_t / min(fast_s)
        naive = agents * naive_t / min(naive_s)
        out[f"{pid} fast"], out[f"{pid} naive"] = fast, naive
        print(
            f"{pid:<18} d=10 K=100 M={agents}: fast path {fast:>10,.0f} agent-steps/s, "
            f"NumPy {naive:>8,.0f} agent-steps/s, ratio {fast / naive:5.1f}x"
        )
    return out


if __name__ == "__main__":
    main()
