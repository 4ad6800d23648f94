"""Gossip_UCB under message loss and a fixed delay, as one compiled trial loop.

The fast path of :mod:`baselines.gossip.fast` pushes only what changed on the wire, which
assumes every neighbour hears every change; a lossy or late network breaks that, so the
faulty network gets its own loop, written plainly (an agent reads its whole inbox each
step, as :class:`~baselines.gossip.GossipUCB` does) with the same kernels. It replays the
PettingZoo stack of a scenario with ``loss`` and ``delay`` (``Scenario.make_env``: the
env, then :class:`~fedbandit_env.wrappers.MessageDelay`, then
:class:`~fedbandit_env.wrappers.MessageLoss`) draw for draw: the env's rewards and
gossip edges, the loss wrapper's uniforms (one per message due, receivers then senders
in order, from its own stream) and the agents' tie-breaks
(``tests/runner/test_replay.py::test_gossip_ucb_under_loss_and_delay_replays``).

Byzantine agents, crashes and Fed_UCB's private rewards under faults stay on the
PettingZoo path (``run_fast`` says so).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from baselines.common.bundles import (
    NetworkArrays,
    ProblemArrays,
    Recording,
    Streams,
    network_arrays,
    problem_arrays,
    recording,
)
from baselines.common.kernels import argmax_count, log_time, tie_pick
from baselines.common.trial import agent_rngs, record_step
from baselines.gossip.kernels import (
    forced_count,
    forced_pick,
    gossip_ucb_index,
    gossip_update,
    update_n_tilde,
)
from baselines.gossip.policies import resolve_alpha_1
from fedbandit_env.core.kernels import pull_arms
from fedbandit_env.protocols.kernels import neighbour_calls, random_edge
from fedbandit_env.rng_kernels import generator_at, generator_table
from fedbandit_env.scenario.trial import TrialResult, TrialSetup
from fedbandit_env.seeding import env_generators, wrapper_generator

PROTOCOL_CODES = {"broadcast": 0, "random_edge_gossip": 1, "neighbour_gossip": 2}
"""The delivery rules both gossip loops implement, by the scenario's protocol name."""
FAULTS = ("loss", "delay")
"""The faults this loop models (``run_fast`` reads it from the runner)."""


class FaultyParams(NamedTuple):
    """The faulty loop's own parameters: Gossip_UCB's ``alpha_1``, the loss probability,
    the delay in steps."""

    alpha_1: float
    loss: float
    delay: int


@njit(cache=True, nogil=True, error_model="numpy")
def _faulty_trial(
    problem: ProblemArrays,
    network: NetworkArrays,
    params: FaultyParams,
    streams: Streams,
    rec: Recording,
) -> None:  # pragma: no cover
    """Gossip_UCB (Algorithm 1) with each message ``delay`` steps late, then lost with
    probability ``loss``; protocol 0 broadcast, 1 random edge, 2 neighbour calls. The
    wrapper stream of ``streams`` is ``MessageLoss``'s."""
    mu = problem.mu
    noise = problem.noise
    sigma = problem.sigma
    gaps = problem.gaps
    protocol = network.protocol
    public = network.public
    edges = network.edges
    neighbors = network.neighbors
    degrees = network.degrees
    adjacency = network.adjacency
    peer_cost = network.peer_cost
    alpha_1 = params.alpha_1
    loss = params.loss
    delay = params.delay
    reward_rng = streams.reward
    protocol_rng = streams.protocol
    loss_rng = streams.wrapper
    agent_table = streams.agents
    horizon = rec.horizon
    steps = rec.steps
    out = rec.out
    t_arms = rec.t_arms
    t_rewards = rec.t_rewards
    cost_out = rec.cost_out
    n, m = mu.shape
    counts = np.zeros((n, m))
    sums = np.zeros((n, m))
    xbar = np.zeros((n, m))
    theta = np.zeros((n, m))
    n_tilde = np.ones((n, m))
    n_tilde_next = np.ones((n, m))
    index = np.zeros(m)
    size = delay + 1  # ring buffer of what the protocol delivered, by step
    wire = np.zeros((size, n, 2 * m))  # the messages sent (float32 values)
    partners = np.zeros((size, n, n), dtype=np.bool_)
    heard = np.zeros((n, n), dtype=np.bool_)  # partners whose message survived
    counted = np.zeros((n, n), dtype=np.bool_)  # senders whose counts survived
    plist = np.zeros((1, n), dtype=np.int64)
    arms = np.zeros(n, dtype=np.int64)
    rewards = np.zeros(n)
    seen = np.zeros(n, dtype=np.float32)
    cum = np.zeros(n)
    cum_cost = 0.0
    n_edges = edges.shape[0]
    r = 0
    for s in range(1, horizon + 1):
        done = s - 1
        for i in range(n):
            if done > 0:  # absorb the last step's pull and what arrived
                a = arms[i]
                counts[i, a] += 1.0
                sums[i, a] += float(seen[i])
                new_mean = sums[i, a] / counts[i, a]
                change = new_mean - xbar[i, a]
                xbar[i, a] = new_mean
                if done == m:
                    theta[i] = xbar[i]
                elif done > m:
                    p = 0
                    for j in range(n):
                        if heard[i, j]:
                            plist[0, p] = j
                            p += 1
                    src = (done - delay) % size
                    gossip_update(theta[i : i + 1], 0, wire[src, :, m:], plist, p, a, change)
            if done < m:
                arms[i] = done
                continue
            n_tilde[i] = n_tilde_next[i]  # line 5 on the senders whose counts arrived
            src = (done - delay) % size
            update_n_tilde(counts[i], wire[src, :, :m], counted[i], n_tilde_next[i])
            lagging = forced_count(counts[i], n_tilde[i], n)
            if lagging:  # line 13
                k = forced_pick(counts[i], n_tilde[i], n, lagging, generator_at(agent_table, i))
            else:  # lines 9-10, as argmax_random_tie draws it
                gossip_ucb_index(theta[i], counts[i], log_time(done - m + 1), n, alpha_1, index)
                k, ties = argmax_count(index)
                if ties > 1:
                    k = tie_pick(index, ties, generator_at(agent_table, i))
            arms[i] = k
        pull_arms(mu, arms, noise, sigma, reward_rng, gaps, rewards, cum)  # the env's step
        here = s % size  # what the protocol delivers now, seen delay steps later
        for i in range(n):
            for k in range(m):
                wire[here, i, k] = np.float32(n_tilde_next[i, k])
                wire[here, i, m + k] = np.float32(theta[i, k])
        if protocol == 1:
            random_edge(edges, protocol_rng, partners[here])
            links = 1 + n_edges
        elif protocol == 2:
            neighbour_calls(neighbors, degrees, protocol_rng, partners[here])
            links = n_edges
            for i in range(n):
                for j in range(i, n):
                    if partners[here, i, j]:
                        links += 1
        else:
            partners[here] = adjacency
            links = n_edges
        cum_cost += peer_cost * links
        due = (s - delay) % size
        for i in range(n):  # MessageDelay, then MessageLoss's draws in its order
            for j in range(n):
                full = s > delay and partners[due, i, j]
                prefix = s > delay and public and adjacency[i, j]
                if (full or prefix) and loss > 0.0 and loss_rng.random() < loss:
                    full = prefix = False
                heard[i, j] = full
                counted[i, j] = prefix if public else full
        for i in range(n):
            seen[i] = np.float32(rewards[i])
        if r < steps.size and s == steps[r]:
            cost_out[r] = cum_cost
        if (r < steps.size and s == steps[r]) or t_arms.shape[0]:
            r = record_step(arms, seen, cum, out, steps, r, s, t_arms, t_rewards)


def run_faulty_gossip_ucb(st: TrialSetup, seeds: tuple[int, Any]) -> TrialResult:
    """One trial of Gossip_UCB with the scenario's ``loss`` and ``delay``."""
    scenario, params = st.scenario, st.params
    net = scenario.network()
    env_seed, team_seed = seeds
    out, arms, rewards = st.buffers()
    reward_rng, protocol_rng = env_generators(env_seed)
    n = scenario.n_agents
    alpha_1 = resolve_alpha_1(params.get("alpha_1"), n)
    cost = np.zeros(st.steps.size)
    rngs = agent_rngs(team_seed, n)  # alive during the call
    _faulty_trial(
        problem_arrays(st),
        network_arrays(
            net,
            PROTOCOL_CODES[scenario.protocol],
            scenario.protocol != "broadcast",
            scenario.link_costs[1],
            adjacency=net.adjacency.astype(np.bool_),
        ),
        FaultyParams(alpha_1, float(scenario.loss), int(scenario.delay)),
        Streams(
            reward_rng,
            protocol_rng,
            # MessageLoss's losses, from the stack plan the PettingZoo path is built from
            st.plan.generator("MessageLoss", env_seed)
            if "MessageLoss" in st.plan.names
            else wrapper_generator(env_seed),
            generator_table(rngs),
        ),
        recording(scenario.horizon, st.steps, out, arms, rewards, cost),
    )
    return TrialResult(out, arms, rewards, cost)


__all__ = ["FAULTS", "PROTOCOL_CODES", "run_faulty_gossip_ucb"]
