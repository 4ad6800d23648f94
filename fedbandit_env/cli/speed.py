"""``fedbandit speed``: agent-steps per second of the fast path, the PettingZoo path and
a plain loop (:mod:`fedbandit_env.runner.speed`)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--quick``.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> p.parse_args(["--quick"]).quick
        True
    """
    parser.add_argument("--quick", action="store_true", help="a tenth of the default work")
    parser.add_argument(
        "--train",
        action="store_true",
        help="instead: PPO's training throughput through AgentVecEnv vs constant envs",
    )


def run(args: argparse.Namespace) -> None:
    """Measure and print the table."""
    if args.train:
        from fedbandit_env.rl.throughput import training_throughput

        steps = 8_000 if args.quick else 80_000
        print(f"PPO, 10 agents, 5 arms, T=200, {steps} agent-steps, one torch thread")
        for setting in ("local", "neighbours+private"):
            r = training_throughput(setting, steps)
            print(
                f"{setting:<18} federated env {r['federated']:8.0f} agent-steps/s | "
                f"constant env {r['plain']:8.0f} | the env's share of training time "
                f"{100 * r['env_share']:5.1f}%"
            )
        return
    from fedbandit_env.runner.speed import run as run_speed

    run_speed(quick=args.quick)


__all__ = ["add_arguments", "run"]
