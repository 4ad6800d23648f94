"""``fedbandit speed``: agent-steps per second of the fast path, the PettingZoo path and
a plain loop (:mod:`fedbandit_env.runner.speed`)."""

from __future__ import annotations

import argparse
from pathlib import Path

DOCS_PAGE = Path("docs/speed-measured.md")
"""The committed page ``fedbandit speed --docs`` regenerates (the site's *Speed, measured*)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--quick``, ``--train``, ``--markdown FILE`` / ``--docs``.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> p.parse_args(["--quick"]).quick, p.parse_args(["--docs"]).markdown
        (True, PosixPath('docs/speed-measured.md'))
    """
    parser.add_argument("--quick", action="store_true", help="a tenth of the default work")
    out = parser.add_mutually_exclusive_group()
    out.add_argument(
        "--markdown",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the measurement as a Markdown page (conditions, every row)",
    )
    out.add_argument(
        "--docs",
        dest="markdown",
        action="store_const",
        const=DOCS_PAGE,
        help=f"regenerate the committed page, {DOCS_PAGE} (the site's 'Speed, measured')",
    )
    parser.add_argument(
        "--train",
        action="store_true",
        help="instead: PPO's training throughput through AgentVecEnv vs constant envs, and "
        "the batched PPO loop against SB3's",
    )


def run(args: argparse.Namespace) -> None:
    """Measure and print the table."""
    if args.train:
        from fedbandit_env.rl.throughput import training_throughput

        if args.markdown is not None:
            raise ValueError("--markdown and --docs write the policies' page, not --train's")
        steps = 8_000 if args.quick else 80_000
        print(f"PPO, 10 agents, 5 arms, T=200, {steps} agent-steps, one torch thread")
        for setting in ("local", "neighbours+private"):
            r = training_throughput(setting, steps)
            print(
                f"{setting:<18} federated env {r['federated']:8.0f} agent-steps/s | "
                f"constant env {r['plain']:8.0f} | the env's share of training time "
                f"{100 * r['env_share']:5.1f}%"
            )
        from fedbandit_env.rl.throughput import batched_speedup

        steps = 20_000 if args.quick else 200_000
        print(f"PPO with the arms net, neighbours, 10 agents, 5 arms, T=200, {steps} agent-steps")
        b = batched_speedup("neighbours", steps)
        print(
            f"SB3 PPO (1 copy, as fedbandit train) {b['sb3']:8.0f} agent-steps/s | SB3 PPO "
            f"(64 copies) {b['sb3_64']:8.0f} | batched PPO (64 copies) {b['batched']:8.0f} | "
            f"batched/SB3 {b['vs_sb3']:5.1f}x, batched/SB3-64 {b['vs_sb3_64']:5.1f}x"
        )
        from fedbandit_env.rl.throughput import recurrent_speedup

        slow = max(steps // 10, 8_000)
        print(
            f"the recurrent learner, neighbours, the same scenario, {steps} agent-steps "
            f"(sb3-contrib's RecurrentPPO: {slow}, its rate)"
        )
        r = recurrent_speedup("neighbours", steps, recurrent_timesteps=slow)
        print(
            f"SB3 PPO (arms net, 1 copy) {r['sb3']:8.0f} agent-steps/s | sb3-contrib "
            f"RecurrentPPO (1 copy) {r['sb3_recurrent']:8.0f} | batched recurrent arms net "
            f"(64 copies) {r['batched']:8.0f} | batched/SB3 {r['vs_sb3']:5.1f}x, "
            f"batched/RecurrentPPO {r['vs_sb3_recurrent']:5.1f}x"
        )
        return
    from fedbandit_env.runner.speed import run as run_speed

    if args.markdown is not None:
        from fedbandit_env.files import check_writable

        check_writable(args.markdown.parent or Path("."), "--markdown")
    run_speed(quick=args.quick, docs=args.markdown)


__all__ = ["add_arguments", "run"]
