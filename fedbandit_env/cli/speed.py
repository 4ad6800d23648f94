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
        help="instead: PPO's training throughput through AgentVecEnv vs constant envs, the "
        "batched PPO loop against SB3's, and the posterior learner against the learner "
        "trained before it (with --device: the posterior learner there)",
    )
    parser.add_argument(
        "--device",
        default=None,
        metavar="DEVICE",
        help="with --train: where the posterior learner trains (numpy, cpu, cuda, auto); "
        "on a GPU only its rate and the learner's view against the bare step are measured",
    )
    parser.add_argument(
        "--copies",
        type=int,
        default=None,
        metavar="B",
        help="with --train: envs the posterior learner steps together (default 128 on "
        "NumPy or the CPU, 16384 on a GPU)",
    )


def run(args: argparse.Namespace) -> None:
    """Measure and print the table."""
    if args.device is not None and not args.train:
        raise ValueError("--device is --train's: where the posterior learner trains")
    if args.copies is not None and (not args.train or args.copies < 1):
        raise ValueError("--copies is --train's, a number of envs >= 1")
    if args.train and args.device not in (None, "numpy", "cpu"):
        _device_train(args)
        return
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
        _posterior_lines(args, 64_000 if args.quick else 1_280_000)
        return
    from fedbandit_env.runner.speed import run as run_speed

    if args.markdown is not None:
        from fedbandit_env.files import check_writable

        check_writable(args.markdown.parent or Path("."), "--markdown")
    run_speed(quick=args.quick, docs=args.markdown)


def _posterior_lines(args: argparse.Namespace, steps: int) -> None:
    """The posterior learner against the learner before it, and its view's cost."""
    from fedbandit_env.rl.throughput import posterior_speedup, view_overhead

    copies = args.copies or 128
    print(
        f"the posterior learner, neighbours, the same scenario, {steps} agent-steps "
        f"({copies} copies on {args.device or 'numpy'}) against the arms net on horizon-free "
        "statistics (64 copies, NumPy), batched PPO, one torch thread"
    )
    p = posterior_speedup(args.device, steps, copies)
    print(
        f"arms net {p['before']:8.0f} agent-steps/s | posterior net {p['posterior']:8.0f} | "
        f"posterior/arms {p['ratio']:5.1f}x"
    )
    v = view_overhead(1024, 50 if args.quick else 200, args.device)
    print(
        f"a step of 1024 envs: bare vector env {1e3 * v['bare']:7.2f} ms | with the posterior "
        f"learner's view (TeamPosterior, flat batch, rewards) {1e3 * v['view']:7.2f} ms | "
        f"{v['ratio']:5.1f}x"
    )


def _device_train(args: argparse.Namespace) -> None:
    """``--train --device cuda``: the posterior learner's rate there, and its view."""
    from fedbandit_env.backend import backend
    from fedbandit_env.rl.throughput import posterior_speedup, view_overhead

    be = backend(args.device)  # a clear error for a GPU that is not there
    copies = args.copies or 16_384
    steps = copies * 10 * 200 * (2 if args.quick else 10)  # whole episodes: 10 updates
    print(
        f"the posterior learner, neighbours, N=10, M=5, T=200, {copies} envs on {be.label}, "
        f"{steps} agent-steps (rollouts and updates; the first update includes warm-up)"
    )
    p = posterior_speedup(args.device, steps, copies, baseline=False)
    print(f"posterior net {p['posterior']:12.0f} agent-steps/s on {p['device']}")
    v = view_overhead(copies, 200, args.device)
    print(
        f"a step of {copies} envs: bare vector env {1e3 * v['bare']:7.2f} ms | with the "
        f"posterior learner's view {1e3 * v['view']:7.2f} ms | {v['ratio']:5.1f}x"
    )


__all__ = ["add_arguments", "run"]
