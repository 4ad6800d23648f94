"""One learner among Gossip_UCB agents: trained in their protocol, then placed in 0..N
seats of a Gossip_UCB team on held-out instances.

The learner (PPO with the permutation-equivariant ``ArmScoringPolicy``) is ``agent_0``
of a team whose other agents run Gossip_UCB (Zhu et al., Algorithm 1) in the
``neighbours`` setting. It speaks their protocol (``SingleAgentEnv(speak="team")``):
its Gossip_UCB team member keeps a state from the learner's own pulls and rewards and
sends that state's messages, so the others gossip with it as with one of their own; the
learner chooses only the arm, from its statistics and the 2M numbers (count estimates,
then mean estimates) each neighbour sends.

Evaluation (``LearnerAmong``) puts the same model in the first ``k`` seats for each
``k`` of ``--seats``, on the same held-out instances, and reports the learners' and the
Gossip_UCB agents' per-agent regret with 95% bootstrap intervals: does one learner do
better than the Gossip_UCB agent in its seat, and does the team cope with more learners?
``k = 0`` is the pure Gossip_UCB team.

The learner's default signal is ``neg_regret`` (minus its regret against the global
means): privileged in training only - it acts on what its seat observes. ``--reward
own`` trains it on its own reward instead.

Run: ``.venv/bin/python examples/learner_among_gossip.py --timesteps 300000 --trials 100``
(10-15 minutes on two shared cores); ``--timesteps 2000 --trials 3`` for a quick look;
``--replot`` redraws the figure from ``among.json`` (or ``--from`` a saved JSON), and
``--into PAGE`` writes the table into PAGE's generated block ``learner-among-gossip``:

    python examples/learner_among_gossip.py --replot \
        --from docs/figures/learner_among_gossip.json --into docs/guides/learned.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np


def markdown(saved: dict[str, Any]) -> str:
    """The saved run as the learned guide's table: per number of learners, the learners'
    and the Gossip_UCB agents' per-agent regret with 95% bootstrap intervals, then the
    seat ``agent_0`` paired by instance (one learner minus the Gossip_UCB agent there).

    Examples:
        >>> row = {"mean": 2.0, "ci": [1.0, 3.0]}
        >>> saved = {"run": {"trials": 2, "agents": 3, "arms": 2, "horizon": 5,
        ...                  "timesteps": 9, "reward": "own"},
        ...          "seats": {"0": {"gossip_ucb": row, "seat_0": [3.0, 5.0]},
        ...                    "1": {"learner": row, "gossip_ucb": row, "seat_0": [1.0, 2.0]}}}
        >>> "| 1 | 2.0 [1.0, 3.0] | 2.0 [1.0, 3.0] |" in markdown(saved)
        True
    """
    from fedbandit_env.runner.results import bootstrap_ci

    run, seats = saved["run"], saved["seats"]
    out = [
        f"{run['trials']} held-out `conflicting` instances, N = {run['agents']}, "
        f"M = {run['arms']}, T = {run['horizon']}; the learner trained "
        f"{run['timesteps']:,} steps on `{run['reward']}` "
        "(`python examples/learner_among_gossip.py`):",
        "",
        "| learners | learner regret [95% CI] | Gossip_UCB agents' regret [95% CI] |",
        "|---|---|---|",
    ]
    for k, row in seats.items():
        cells = [
            "{:.1f} [{:.1f}, {:.1f}]".format(row[r]["mean"], *row[r]["ci"]) if r in row else "-"
            for r in ("learner", "gossip_ucb")
        ]
        out.append(f"| {k} | {cells[0]} | {cells[1]} |")
    if "0" in seats and "1" in seats:
        diff = np.array(seats["1"]["seat_0"]) - np.array(seats["0"]["seat_0"])
        lo, hi = bootstrap_ci(diff)
        out += ["", f"Seat `agent_0`, one learner minus the Gossip_UCB agent on the same "
                f"instances: {diff.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]."]  # fmt: skip
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train the learner, evaluate it in 0..N seats, print a table, save a figure;
    return the per-``k`` results."""
    import gymnasium as gym
    from stable_baselines3 import PPO

    import fedbandit_env  # noqa: F401 - registers the Gymnasium single-agent view
    from fedbandit_env.registry import make
    from fedbandit_env.rl import LearnerAmong
    from fedbandit_env.rl.arm_policy import ArmScoringPolicy, arm_policy_kwargs
    from fedbandit_env.rl.common import quiet_logger, set_torch_threads
    from fedbandit_env.rl.single_agent import make_single_agent
    from fedbandit_env.runner import run_trials
    from fedbandit_env.runner.results import bootstrap_ci

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--arms", type=int, default=5)
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--timesteps", type=int, default=300_000)
    parser.add_argument("--trials", type=int, default=100, help="held-out instances")
    parser.add_argument("--reward", default="neg_regret", choices=("own", "neg_regret", "team"))
    parser.add_argument("--seats", default="0,1,2,5,10", help="learner counts to evaluate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("results/learner_among_gossip"))
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--replot", action="store_true", help="redraw the figure from the saved JSON"
    )
    parser.add_argument(
        "--from", dest="saved", type=Path, default=None, metavar="JSON",
        help="the saved JSON --replot reads (default OUT/among.json; the figure is drawn "
        "beside it, same name, .png)",
    )  # fmt: skip
    parser.add_argument(
        "--into", type=Path, default=None, metavar="PAGE",
        help="with --replot: write the table into PAGE's block 'learner-among-gossip'",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.replot:
        path = args.saved or args.out / "among.json"
        saved = json.loads(path.read_text())
        run = argparse.Namespace(**saved["run"])
        _plot(saved["seats"], path.with_suffix(".png"), run)
        if args.into is not None:
            from fedbandit_env.files import replace_block, write_text_atomic

            page = args.into.read_text(encoding="utf-8")
            page = replace_block(page, "learner-among-gossip", markdown(saved))
            write_text_atomic(args.into, page)
            print(f"wrote the block 'learner-among-gossip' of {args.into}")
        return dict(saved["seats"])
    seats = sorted({int(k) for k in args.seats.split(",")})
    if seats[0] < 0 or seats[-1] > args.agents:
        raise SystemExit(f"--seats must lie in 0..{args.agents}, got {args.seats}")
    shape = {
        "n_agents": args.agents,
        "n_arms": args.arms,
        "horizon": args.horizon,
        "instance": "conflicting",
    }  # the kind the learned guide's numbers were measured on
    set_torch_threads(1)

    env = gym.make(
        "fedbandit/FederatedMABSingle-v0",
        others="gossip_ucb",
        setting="neighbours",
        reward=args.reward,
        **shape,
    )
    steps = 5 * args.horizon  # five episodes (instances) per update
    model = PPO(
        ArmScoringPolicy,
        env,
        n_steps=steps,
        batch_size=steps // 5,
        seed=args.seed,
        device="cpu",
        policy_kwargs=arm_policy_kwargs(env),
    )
    quiet_logger(model)  # no SB3-<date> folder left in the temporary directory
    model.learn(args.timesteps, progress_bar=False)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save(args.out / "model.zip")

    held_out = make_single_agent("gossip_ucb", "neighbours", instances="held_out", **shape)
    agents = list(held_out.env.possible_agents)
    results: dict[str, Any] = {}
    for k in seats:

        def team(k: int = k) -> Any:
            reference = make("gossip_ucb")
            return LearnerAmong(model, reference, seats=agents[:k]) if k else reference

        curves = run_trials(
            lambda: held_out.env, team, args.trials, seed=args.seed + 1, progress=False
        )
        final = curves.regret[:, :, -1]  # (trials, agents)
        row: dict[str, Any] = {"learners": k}
        for role, cols in (("learner", slice(0, k)), ("gossip_ucb", slice(k, None))):
            if final[:, cols].size:
                per_trial = final[:, cols].mean(axis=1)
                lo, hi = bootstrap_ci(per_trial)
                row[role] = {"mean": float(per_trial.mean()), "ci": [lo, hi]}
        row["seat_0"] = final[:, 0].tolist()  # paired by instance across k
        results[str(k)] = row

    print(
        f"{args.trials} held-out instances, N={args.agents}, M={args.arms}, "
        f"T={args.horizon}, learner trained {args.timesteps} steps on {args.reward}"
    )
    print(f"{'learners':>8}  {'learner regret [95% CI]':<28}{'Gossip_UCB regret [95% CI]':<28}")
    for k, row in results.items():
        cells = []
        for role in ("learner", "gossip_ucb"):
            r = row.get(role)
            cells.append(f"{r['mean']:.1f} [{r['ci'][0]:.1f}, {r['ci'][1]:.1f}]" if r else "-")
        print(f"{k:>8}  {cells[0]:<28}{cells[1]:<28}")
    if "0" in results and "1" in results:
        diff = np.array(results["1"]["seat_0"]) - np.array(results["0"]["seat_0"])
        lo, hi = bootstrap_ci(diff)
        print(
            f"seat agent_0, learner minus Gossip_UCB on the same instances: "
            f"{diff.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]"
        )
    run = {k: getattr(args, k) for k in ("agents", "arms", "horizon", "timesteps", "trials")}
    run |= {"reward": args.reward, "seed": args.seed}
    saved = {"run": run, "seats": results}
    (args.out / "among.json").write_text(json.dumps(saved, indent=1) + "\n")
    _plot(results, args.out / "among.png", args)
    return results


def _plot(results: dict[str, Any], path: Path, args: argparse.Namespace) -> None:
    """Per-agent regret of the learners and of the Gossip_UCB agents against the number
    of learners, with 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for role, label, colour in (
        ("learner", "learners (PPO, arms net)", "tab:orange"),
        ("gossip_ucb", "Gossip_UCB agents", "tab:blue"),
    ):
        ks = [int(k) for k, r in results.items() if role in r]
        means = np.array([results[str(k)][role]["mean"] for k in ks])
        cis = np.array([results[str(k)][role]["ci"] for k in ks]).reshape(-1, 2)
        err = np.abs(cis.T - means)
        ax.errorbar(ks, means, yerr=err, marker="o", capsize=3, label=label, color=colour)
    ax.set_xlabel(f"learners among {args.agents} agents")
    ax.set_ylabel(f"per-agent regret at T = {args.horizon}")
    ax.set_title(
        f"{args.trials} held-out instances, neighbours setting; learner trained on {args.reward}",
        fontsize=9,
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
