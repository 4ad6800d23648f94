"""Local and cooperative Thompson sampling's fast paths.

:data:`run_local_ts` and :data:`run_coop_ts` are the family's vector policies
(:mod:`baselines.thompson.vector`) rolled out by the core in compiled code
(:class:`~fedbandit_env.runner.vector_trials.CompiledTrials`): no messages, or
Broadcast's, RandomEdgeGossip's or NeighbourGossip's; raw rewards, or private ones
(``VecPrivateRewards`` steps its trees inside the rollout, either estimator). The trials
are the PettingZoo path's (:func:`fedbandit_env.testing.check_replay`,
``tests/families/thompson/test_thompson_vector.py``). The family's whole-trial loop is
gone (issue 62). Measured before it went, beside it in one process on 2 cores (2 trials,
one and two threads): on the ``fedbandit speed`` grid (random-edge gossip, N = 10, M =
10 complete and N = 50, M = 100 Erdos-Renyi) the rollout ran at 0.81-1.03x its speed,
private rewards 0.82-0.98x, Broadcast 0.86-0.95x, and neighbour gossip 0.77-0.93x (the
lowest at N = 10 on two threads, one env a thread: the policy step's call costs each
step what a batch of one env cannot share).
"""

from __future__ import annotations

from fedbandit_env.runner.vector_trials import CompiledTrials

run_local_ts = CompiledTrials("baselines.thompson.vector:local_ts")
"""``local_ts``'s fast path: :class:`~baselines.thompson.vector.ThompsonVector` alone,
rolled out by the core."""
run_coop_ts = CompiledTrials("baselines.thompson.vector:coop_ts")
"""The fast path of ``coop_ts``, ``coop_ts_relay`` and ``private_coop_ts``: the vector
policy rolled out by the core with Broadcast's or a gossip protocol's messages, raw or
private rewards."""


__all__ = ["run_coop_ts", "run_local_ts"]
