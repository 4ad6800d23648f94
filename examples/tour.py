"""The five-minute tour: make an env, wrap it, plug in a policy, read the regret.

Run: ``.venv/bin/python examples/tour.py``
"""

from __future__ import annotations

import numpy as np

from baselines import LocalUCB1, make_team
from fedbandit_env import Network, federated_mab_v0
from fedbandit_env.policies import AgentSpec, IndependentTeam, Policy
from fedbandit_env.problems import conflicting
from fedbandit_env.runner import run_trials
from fedbandit_env.wrappers import LocalStatistics

# 1. A problem: 8 agents, 4 arms, half of the agents locally misled.
problem = conflicting(n_agents=8, n_arms=4, conflict_fraction=0.5, gap=0.1, seed=0)
print("global means", problem.global_means.round(3), "best arm", problem.best_arm)
print("locally best arms", problem.local_best_arms, "misled agents", problem.conflicting_agents)

# 2. An env on a ring, with 2-number messages, wrapped to add per-arm statistics.
env = LocalStatistics(
    federated_mab_v0.parallel_env(
        problem=problem, network=Network.ring(8), horizon=500, message_dim=2
    )
)
obs, infos = env.reset(seed=0)
print("observation keys:", sorted(obs["agent_0"]))


# 3. A policy of your own: greedy on the wrapper's means, sharing its best mean.
class Greedy(Policy):
    def reset(self, spec: AgentSpec, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.n_arms = spec.n_arms

    def act(self, observation: dict) -> dict:
        counts, means = observation["counts"], observation["means"]
        arm = int(np.argmin(counts)) if counts.min() == 0 else int(np.argmax(means))
        return {"arm": arm, "message": np.array([arm, means[arm]], dtype=np.float32)}


team = IndependentTeam(Greedy, name="greedy")
team.reset(env, seed=0)
while env.agents:
    obs, rewards, terminations, truncations, infos = env.step(team.act(obs))
print("greedy per-agent regret:", [round(infos[a]["cumulative_regret"], 1) for a in infos])

# 4. Compare reference baselines over trials with the runner.
for policy in ("local_ucb", "oracle_ucb"):
    curves = run_trials(
        lambda: federated_mab_v0.parallel_env(problem=problem, horizon=2000),
        lambda p=policy: make_team(p),
        n_trials=3,
        seed=0,
        record_every=100,
        progress=False,
    )
    print(f"{policy:>10}: per-agent regret at T=2000: {curves.final_per_agent.mean():.1f}")

# 5. Policies also run alone: LocalUCB1 is an IndexPolicy supplying only its index.
print("LocalUCB1 is a", LocalUCB1.__mro__[1].__name__)
