"""The plain baselines' fast paths: local UCB1 and KL-UCB, random, the pooled oracle.

Each is its vector policy (:mod:`baselines.ucb.vector`) played by the core's compiled
rollout (:class:`~fedbandit_env.runner.vector_trials.CompiledTrials`): the policy's
compiled step and the env's (:func:`~fedbandit_env.core.kernels.step_envs`) in one loop
over a batch of envs, no trial loop of the family's own. They replay the PettingZoo path
step for step (``tests/runner/test_replay.py``); they are the registry's
``fast_entry_point``s.

Examples:
    >>> from fedbandit_env.runner.fast import run_fast
    >>> from fedbandit_env.scenario import Scenario
    >>> run_fast("local_ucb", Scenario(n_agents=3, n_arms=2, horizon=50), 2,
    ...          progress=False).regret.shape
    (2, 3, 50)
"""

from __future__ import annotations

from fedbandit_env.runner.vector_trials import CompiledTrials

run_local_ucb = CompiledTrials("baselines.ucb.vector:local_ucb")
"""``local_ucb``'s fast path."""
run_kl_ucb = CompiledTrials("baselines.ucb.vector:kl_ucb")
"""``kl_ucb``'s fast path."""
run_random = CompiledTrials("baselines.ucb.vector:RandomVector")
"""``random``'s fast path."""
run_oracle = CompiledTrials("baselines.ucb.vector:OracleVector")
"""``oracle_ucb``'s fast path."""

__all__ = ["run_kl_ucb", "run_local_ucb", "run_oracle", "run_random"]
