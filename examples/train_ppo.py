"""Train PPO and A2C on a federated MAB under privacy and messages, and compare them with
Gossip_UCB, Fed_UCB and local UCB1 on the same scenario, wrappers and seeds.

The scenario: 6 agents, 4 arms, a *conflicting* instance (half the agents see a decoy as
their best arm), Bernoulli rewards, complete graph, messages broadcast to neighbours.

What the learned policy receives (one flat float32 vector per agent, built by
``AgentVecEnv`` from the wrapper stack ``LearnerStack(epsilon=1, share_means=True)``):

- ``arm`` (one-hot, its last pull), ``reward`` (its *private* reward increment from the
  tree mechanism of ``PrivateRewards``), ``step``;
- ``counts`` and ``private_means``: its own pull counts and epsilon-DP means;
- ``messages`` (N x M) and ``mask``: every neighbour's private means, sent as messages
  (the stack's ``message_fn``), so a learner can average out the local biases as the
  reference algorithms do.

Training reward: minus the step's pseudo-regret against the global means (privileged,
available in simulation only; a learner maximising its *local* reward learns the decoy).
Evaluation uses no privileged information. The learners are trained and evaluated on one
instance, so they may memorise it; train across instance seeds to study generalisation.

Run: ``.venv/bin/python examples/train_ppo.py --timesteps 60000 --out results/train_ppo``
(about a minute here). It evaluates on the training instance and on a held-out one
(``--eval-seed``). Then
``.venv/bin/fedbandit bench --policies ppo:results/train_ppo/ppo.zip,fed_ucb --agents 6
--arms 4 --protocol broadcast`` re-evaluates the saved model through the same stack.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import stable_baselines3 as sb3

from fedbandit_env.rl import AgentVecEnv, LearnerStack, ModelTeam
from fedbandit_env.runner import RegretCurves, format_table, plot_regret, run_trials, write_csv
from fedbandit_env.runner.fast import run_fast
from fedbandit_env.runner.scenario import Scenario

SCENARIO = Scenario(
    n_agents=6, n_arms=4, instance="conflicting", horizon=200, protocol="broadcast", seed=0
)
STACK = LearnerStack(epsilon=1.0, share_means=True)


def train(algo: str, timesteps: int, seed: int, out: Path) -> object:
    """Train one model with parameters shared across agents; save it with its stack."""
    venv = AgentVecEnv(STACK.make_env(SCENARIO), reward="neg_regret", message_fn=STACK.message_fn)
    if algo == "ppo":
        model = sb3.PPO(
            "MlpPolicy", venv, n_steps=128, batch_size=192, learning_rate=1e-3, seed=seed
        )
    else:
        model = sb3.A2C("MlpPolicy", venv, n_steps=16, learning_rate=1e-3, seed=seed)
    model.learn(total_timesteps=timesteps)
    path = out / f"{algo}.zip"
    model.save(path)
    STACK.save(path)
    return model


def evaluate(
    models: dict[str, object], scenario: Scenario, trials: int, seed: int, progress: bool
) -> list[RegretCurves]:
    """The learned models and the references on one scenario, same seeds."""
    curves = []
    for algo, model in models.items():
        curves.append(
            run_trials(
                lambda: STACK.make_env(scenario),
                lambda model=model, algo=algo: ModelTeam(  # type: ignore[misc]
                    model,  # type: ignore[arg-type]
                    name=algo,
                    message_fn=STACK.message_fn,
                ),
                n_trials=trials,
                seed=seed,
                record_every=10,
                label=algo,
                progress=progress,
            )
        )
    for pid, params in (("gossip_ucb", {}), ("fed_ucb", {"epsilon": 1.0}), ("local_ucb", {})):
        curves.append(
            run_fast(pid, scenario, trials, seed=seed, record_every=10, progress=False, **params)
        )
    return curves


def main(argv: list[str] | None = None) -> dict[str, list[RegretCurves]]:
    """Train, evaluate against the references on the training instance and a held-out
    one, print the tables, save plots and CSVs."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timesteps", type=int, default=60_000, help="agent-steps of training")
    p.add_argument("--trials", type=int, default=10, help="evaluation trials")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-seed", type=int, default=1, help="instance seed held out")
    p.add_argument("--out", type=Path, default=Path("results/train_ppo"))
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    models = {}
    for algo in ("ppo", "a2c"):
        start = time.perf_counter()
        models[algo] = train(algo, args.timesteps, args.seed, args.out)
        seconds = time.perf_counter() - start
        print(f"trained {algo} for {args.timesteps} agent-steps in {seconds:.0f} s")
    held_out = Scenario(**{**SCENARIO.to_dict(), "seed": args.eval_seed})
    results = {}
    for name, scenario in (("training_instance", SCENARIO), ("held_out_instance", held_out)):
        curves = evaluate(models, scenario, args.trials, args.seed + 1, not args.no_progress)
        print(f"\n{name} (instance seed {scenario.seed}):")
        print(format_table(curves))
        write_csv(curves, args.out / f"{name}.csv")
        plot_regret(curves, args.out / f"{name}.png", title=f"learned vs reference, {name}")
        results[name] = curves
    print(f"\nwrote plots, CSVs, ppo.zip and a2c.zip (with their stacks) to {args.out}")
    return results


if __name__ == "__main__":
    main()
