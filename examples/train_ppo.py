"""Train PPO for an information setting on train instances, compare it with the
reference policies on held-out instances of the same distribution, in the same setting.

What the learner sees is what every policy in the table sees: the setting's stack
(``local``: its own arm, reward, counts and means; ``neighbours``: also every
neighbour's means, sent as messages each step). It is trained on its *own* reward
(what the agent observes; ``--reward neg_regret`` or ``team`` for the privileged
signals), on a fresh instance of the distribution every episode
(``Scenario(instances="train")``, four env copies per batch), and evaluated on held-out
instances (``instances="held_out"``), whose seeds training never uses, drawing its
arms from its policy with each trial's seed. The network is ``ArmScoringPolicy`` (one
network scores every arm; ``--net mlp`` for SB3's MLP on the flat observation). The
oracle row is a privileged bound (it pools every agent's raw rewards).

Run: ``.venv/bin/python examples/train_ppo.py --timesteps 1000000 --trials 100``
(about 6 minutes a setting here); ``--timesteps 50000 --trials 20`` for a quick look.
The same from the command line::

    fedbandit train ppo --net arms --copies 4 --setting neighbours --timesteps 1000000 \\
        --out runs/arms_neighbours
    fedbandit bench --setting neighbours --held-out --horizon 200 --trials 100 \\
        --policies ppo:runs/arms_neighbours/model.zip,gossip_ucb,local_ucb,oracle_ucb,random
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from fedbandit_env.rl import LearnerStack
from fedbandit_env.rl.train import train_model
from fedbandit_env.runner import RegretCurves, format_table, write_csv
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario import Scenario

REFERENCES = {"local": ["local_ucb"], "neighbours": ["gossip_ucb", "local_ucb"]}


def main(argv: list[str] | None = None) -> dict[str, list[RegretCurves]]:
    """Train and compare in each setting; print one table per setting; return the
    curves by setting."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timesteps", type=int, default=200_000)
    parser.add_argument("--trials", type=int, default=100, help="held-out instances")
    parser.add_argument("--settings", default="local,neighbours")
    parser.add_argument(
        "--net", default="arms", choices=("arms", "mlp"), help="arms: one network per arm"
    )
    parser.add_argument("--reward", default="own", choices=("own", "neg_regret", "team"))
    parser.add_argument("--out", type=Path, default=Path("results/train_ppo"))
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    tables: dict[str, list[RegretCurves]] = {}
    for setting in args.settings.split(","):
        scenario = Scenario(n_agents=10, n_arms=5, horizon=200, setting=setting)
        folder = args.out / setting
        path = train_model(
            "ppo",
            scenario,
            LearnerStack.for_setting(setting, reward=args.reward),
            args.timesteps,
            folder,
            progress=not args.no_progress,
            copies=4,
            net=args.net,
        )
        held_out = replace(scenario, instances="held_out")
        curves = [evaluate(f"ppo:{path}", held_out, trials=args.trials, label="ppo")]
        for pid in [*REFERENCES[setting], "oracle_ucb", "random"]:
            curves.append(evaluate(pid, held_out, trials=args.trials))
        print(f"\n[{setting}] {args.trials} held-out instances of {held_out.distribution().name}")
        print(format_table(curves))
        write_csv(curves, folder / "held_out.csv")
        tables[setting] = curves
    return tables


if __name__ == "__main__":
    main()
