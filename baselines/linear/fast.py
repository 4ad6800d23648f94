"""The linear family's fast paths, the registry's ``fast_entry_point``s: every one is a
vector policy rolled out by the linear core
(:class:`~fedbandit_env.runner.vector_trials.CompiledTrials`, no trial loop of the
family's own): ``lin_ucb`` and ``pooled_lin_ucb``
(:mod:`baselines.linear.vector`, no messages), centralized FedUCB's variants (the same
module, over Synchronize, whose rounds the core routes) and decentralized FedUCB's
(:mod:`baselines.linear.dec_vector`, over GammaHops, whose hops the core routes).

Each step calls the kernels the per-agent policies call (:mod:`baselines.linear.kernels`),
takes every derived constant from a policy reset exactly as on the PettingZoo path
(threshold, schedule, noise, ``rho_min``, ``rho_max``, ``kappa``), draws its noise from
the generators the team would, and the core draws what the env would (rewards, decision
sets) and reproduces what crosses the API (float32 contexts, rewards, messages), so each
replays the PettingZoo path step for step (``tests/runner/test_replay.py``).

Examples:
    >>> run_dec_fedlin_ucb.policy({"gamma": 2}).name
    'dec_fedlin_ucb'
"""

from __future__ import annotations

from fedbandit_env.runner.vector_trials import CompiledTrials

run_dec_fedlin_ucb = CompiledTrials("baselines.linear.dec_vector:dec_fedlin_ucb")
"""The fast path of ``dec_fedlin_ucb`` (and ``private_dec_fedlin_ucb``: the registered
options pick the schedule and the noise):
:class:`~baselines.linear.dec_vector.DecFedLinUCBVector` rolled out by the linear core,
which routes GammaHops' messages."""
run_private_dec_fedlin_ucb = run_dec_fedlin_ucb
"""``private_dec_fedlin_ucb``'s fast path (:data:`run_dec_fedlin_ucb`)."""

run_lin_ucb = CompiledTrials("baselines.linear.vector:lin_ucb")
"""``lin_ucb``'s fast path: :class:`~baselines.linear.vector.LinUCBVector` rolled out by
the linear core (no trial loop of its own)."""

run_pooled_lin_ucb = CompiledTrials("baselines.linear.vector:pooled_lin_ucb")
"""``pooled_lin_ucb``'s fast path, the same way (the pooled learner of each env)."""


run_fedlin_ucb = CompiledTrials("baselines.linear.vector:fedlin_ucb")
"""The fast path of ``fedlin_ucb`` and its variants (``fedlin_ucb_fixed``,
``fedlin_ucb_dp``, ``private_fedlin_ucb``: the registered options pick the schedule and
the noise): :class:`~baselines.linear.vector.FedLinUCBVector` rolled out by the linear
core, which routes Synchronize's rounds."""

run_fedlin_ucb_fixed = run_fedlin_ucb
"""``fedlin_ucb_fixed``'s fast path (:data:`run_fedlin_ucb`)."""
run_fedlin_ucb_dp = run_fedlin_ucb
"""``fedlin_ucb_dp``'s fast path (:data:`run_fedlin_ucb`)."""
run_private_fedlin_ucb = run_fedlin_ucb
"""``private_fedlin_ucb``'s fast path (:data:`run_fedlin_ucb`)."""


__all__ = [
    "run_dec_fedlin_ucb",
    "run_fedlin_ucb",
    "run_fedlin_ucb_dp",
    "run_fedlin_ucb_fixed",
    "run_lin_ucb",
    "run_pooled_lin_ucb",
    "run_private_dec_fedlin_ucb",
    "run_private_fedlin_ucb",
]
