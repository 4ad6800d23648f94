"""How long a saved model takes per trial, against the reference's compiled loop.

A model is evaluated with every agent of every trial in one forward pass a step
(:mod:`fedbandit_env.rl.batched`), or one PettingZoo rollout per trial (the path of
``evaluate(..., interactive=True)``). This prints both, Gossip_UCB's fast path (local
UCB1's in ``local``), and the forward pass alone (SB3's default 64 x 64 actor on the
same batches, no env), all measured in one run: compare the ratios. The network's
weights do not change its cost, so an untrained model of the trained architecture is
timed.

    python examples/model_speed.py                        # T = 2e4, 100 trials
    python examples/model_speed.py --horizon 2000 --trials 20
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np


def main() -> None:
    """Time the three paths in each setting and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--interactive-trials", type=int, default=1)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--arms", type=int, default=5)
    parser.add_argument("--settings", default="local,neighbours,gossip,gossip+private")
    args = parser.parse_args()

    import stable_baselines3 as sb3

    from fedbandit_env.rl import AgentVecEnv, LearnerStack, ModelTeam
    from fedbandit_env.rl.batched import batched_trials
    from fedbandit_env.rl.common import set_torch_threads
    from fedbandit_env.rl.team import action_probabilities
    from fedbandit_env.runner.evaluate import evaluate
    from fedbandit_env.runner.rollout import run_trials
    from fedbandit_env.scenario import Scenario
    from fedbandit_env.seeding import spawn

    set_torch_threads(1)
    n, m, horizon, k = args.agents, args.arms, args.horizon, args.trials
    print(f"N={n}, M={m}, T={horizon}; ms per trial, one thread, measured in one run")
    for setting in args.settings.split(","):
        epsilon = 1.0 if setting.endswith("+private") else None
        scenario = Scenario(
            n_agents=n, n_arms=m, horizon=horizon, setting=setting, epsilon=epsilon,
            instances="train",
        )  # fmt: skip
        stack = LearnerStack.for_setting(setting, epsilon)
        message_fn = stack.message_fn if stack.share_means else None
        venv = AgentVecEnv(stack.make_env(scenario), message_fn=message_fn, scale=stack.scale)
        model = sb3.PPO("MlpPolicy", venv, seed=0, device="cpu")
        batched_trials(model, stack, scenario, spawn(1, 2))  # compile the gossip draws
        start = time.perf_counter()
        batched_trials(model, stack, scenario, spawn(0, k))
        batched = (time.perf_counter() - start) / k
        start = time.perf_counter()
        run_trials(
            functools.partial(stack.make_env, scenario),
            functools.partial(ModelTeam, model, message_fn=message_fn, scale=stack.scale),
            n_trials=args.interactive_trials,
            progress=False,
        )
        interactive = (time.perf_counter() - start) / args.interactive_trials
        batch = np.zeros((min(k, 128) * n, venv.observation_space.shape[0]), dtype=np.float32)
        start = time.perf_counter()
        for _ in range(200):
            action_probabilities(model, batch)
        forward = (time.perf_counter() - start) / 200 * horizon / min(k, 128)
        reference = "local_ucb" if setting == "local" else "gossip_ucb"
        fast_scenario = scenario if setting != "gossip+private" else None
        if fast_scenario is None:  # the private setting has no compiled loop: gossip's
            from dataclasses import replace

            fast_scenario = replace(scenario, setting="gossip", epsilon=None)
        evaluate(reference, fast_scenario, trials=2)  # compile
        start = time.perf_counter()
        curves = evaluate(reference, fast_scenario, trials=k)
        ref = (time.perf_counter() - start) / k
        where = curves.meta["path"] + ("" if fast_scenario is scenario else ", in gossip")
        print(
            f"{setting:15s} model batched {batched * 1e3:8.1f}"
            f" | PettingZoo {interactive * 1e3:9.1f}"
            f" | forward pass alone {forward * 1e3:7.1f} | {reference} ({where}) {ref * 1e3:6.1f}"
            f" | batched/PettingZoo {batched / interactive:5.3f}  batched/{reference}"
            f" {batched / ref:5.1f}x  forward/{reference} {forward / ref:5.1f}x"
        )


if __name__ == "__main__":
    main()
