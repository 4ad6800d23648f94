"""CDP-, DDP- and HDP-MAB's fast paths.

:data:`run_cdp_mab`, :data:`run_ddp_mab` and :data:`run_hdp_mab` are the family's vector
policy (:class:`~baselines.elimination.vector.EliminationVector`: each agent's own epoch
books, Algorithm 1 through :mod:`baselines.elimination.kernels`) rolled out by the core
in compiled code (:class:`~fedbandit_env.runner.vector_trials.CompiledTrials`): over
ServerRounds (CDP), GIS flooding (DDP) or the hybrid structure (HDP), the quiet steps
between rounds played without calling the step
(:class:`~fedbandit_env.core.rounds.QuietSteps`), raw rewards or clipped ones
(``VecClipRewards`` clips inside the rollout). The trials are the PettingZoo path's
(``tests/families/elimination/test_elimination_vector.py``, ``tests/runner/test_replay.py``).

The family's whole-trial loop (one shared epoch schedule for every agent of a trial) is
gone (issue 62). Measured before it went, on the ``fedbandit speed`` line
(``examples/vector_gate.py --speed-line``, 2 trials, one thread, 2 cores shared with a
test run; best of 15, two runs each): CDP 0.84-0.88x its speed at N = 10, M = 10
(complete) and 0.84-0.90x at N = 50, M = 100 (Erdos-Renyi), DDP 1.06x and 0.87-0.93x,
HDP 0.90-1.07x and 0.88-0.95x; best of 5 on a quieter host read 0.63-1.36x across the
cells, the loop's own time moving by up to 70% between runs. At 300,000-1,000,000 steps,
where no fixed cost weighs, 0.80-1.54x (ns an agent-step: CDP 12.9 against 11.8 and
12.1 against 10.4, DDP 13.5 against 11.8 and 16.2 against 13.0, HDP 14.6 against 22.5
and 20.5 against 20.2).
"""

from __future__ import annotations

from fedbandit_env.runner.vector_trials import CompiledTrials

run_cdp_mab = CompiledTrials("baselines.elimination.vector:cdp_mab")
"""``cdp_mab``'s fast path: the vector policy over ServerRounds, rolled out by the core."""
run_ddp_mab = CompiledTrials("baselines.elimination.vector:ddp_mab")
"""``ddp_mab``'s fast path: the vector policy over GIS flooding, rolled out by the core."""
run_hdp_mab = CompiledTrials("baselines.elimination.vector:hdp_mab")
"""``hdp_mab``'s fast path: the vector policy over the hybrid structure, rolled out by
the core."""

__all__ = ["run_cdp_mab", "run_ddp_mab", "run_hdp_mab"]
