"""DDUCB and coop-UCB2's fast paths: their vector policies (:mod:`baselines.consensus.vector`)
rolled out by the core with Broadcast's messages in compiled code
(:class:`~fedbandit_env.runner.vector_trials.CompiledTrials`, ``MABCore.rollout``), no
trial loop of the family's own. They replay the PettingZoo path step for step, the
per-agent policies' arms, rewards, regret and link costs
(``tests/families/consensus/test_consensus.py``, :func:`fedbandit_env.testing.check_replay`).

Examples:
    >>> from fedbandit_env.runner.fast import run_fast
    >>> from fedbandit_env.scenario import Scenario
    >>> run_fast("coop_ucb2", Scenario(n_agents=4, n_arms=2, horizon=30, graph="ring"), 2,
    ...          progress=False).comm_cost.shape
    (2, 30)
"""

from __future__ import annotations

from fedbandit_env.runner.vector_trials import CompiledTrials

run_dducb = CompiledTrials("baselines.consensus.vector:dducb")
"""The fast path of ``dducb``, ``dducb_accelerated`` and ``dducb_plain`` (the variant
from the options)."""
run_coop_ucb2 = CompiledTrials("baselines.consensus.vector:coop_ucb2")
"""The fast path of ``coop_ucb2``."""

__all__ = ["run_coop_ucb2", "run_dducb"]
