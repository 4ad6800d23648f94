"""Batched evaluation of a saved model: every agent of many trials in one forward pass.

Evaluated through PettingZoo (:class:`~fedbandit_env.rl.team.ModelTeam`), a model costs
one env step and one small forward pass per trial and step, about 10-15k agent-steps a
second: a trial at T = 2e4 takes seconds where a reference's compiled loop takes
milliseconds. Here ``K`` trials advance together: their observations are one
``(K N, D)`` array, the network runs once per step for all of them, and the env and the
learner's wrappers (:class:`~fedbandit_env.wrappers.LocalStatistics`,
:class:`~fedbandit_env.wrappers.PrivateRewards`,
:class:`~fedbandit_env.wrappers.HeldMessages`,
:class:`~fedbandit_env.wrappers.HorizonFree`, broadcast or random-edge messages of means
or means and pull shares) are array operations over trials and agents.

**The same trials.** Every random number comes from the stream the PettingZoo path
draws it from, in the same order: each trial's env is built and reset with its own seed
(so the instance, the network and the generators are the env's own), the rewards'
uniforms (or normals) and the model's action uniforms do not depend on the actions and
are drawn ahead in blocks (``random((B, N))`` gives the numbers of ``B`` calls of
``random(N)``), the gossip edge is NumPy's bounded draw replayed bit for bit
(:func:`~fedbandit_env.rng_kernels.integer_below`), and the private sums are the
wrapper's own :class:`~fedbandit_env.privacy.mechanisms.TreeMechanism`, seeded by the
wrapper at reset (no second implementation of the privacy mechanism). The one
difference is floating point inside the network: a batch of ``K N`` rows may round an
action probability in its last bit differently from a batch of ``N``, which changes a
sampled arm only when a uniform falls within about 1e-7 of a boundary
(``tests/rl/test_batched.py`` checks arms and regret equal to the PettingZoo path's).

A stack it does not model (faults, other wrappers, server or public-prefix protocols, a
recurrent policy) is reported by :func:`unsupported`, and
:func:`~fedbandit_env.runner.evaluate.evaluate` then takes the PettingZoo path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from numba import njit
from pettingzoo import ParallelEnv
from tqdm.auto import tqdm

from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.protocols.broadcast import Broadcast
from fedbandit_env.protocols.gossip import RandomEdgeGossip
from fedbandit_env.rl.common import batch_observations, scale_box
from fedbandit_env.rl.stack import LearnerStack
from fedbandit_env.rl.team import Predictor, action_probabilities, draw_arms
from fedbandit_env.rng_kernels import generator_at, generator_table, integer_below
from fedbandit_env.runner.rollout import record_steps
from fedbandit_env.runner.scenario import Scenario
from fedbandit_env.seeding import model_generator, split_trial_seed
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.wrappers.flatten import FlatLayout, flat_box
from fedbandit_env.wrappers.held_messages import HeldMessages
from fedbandit_env.wrappers.horizon_free import HorizonFree, horizon_free_features
from fedbandit_env.wrappers.local_statistics import LocalStatistics
from fedbandit_env.wrappers.privacy import PrivateRewards

MODELLED_KEYS = frozenset(
    {"arm", "reward", "step", "messages", "mask", "counts", "means", "private_means"}
    | {"held", "heard", "age", "log_step", "shares", "bonus", "log_age"}
)
"""Observation entries the batched loop computes."""


@njit(cache=True, nogil=True)
def _draw_below(table: Any, n: IntArray, out: IntArray) -> None:  # pragma: no cover
    """``out[k, b] = rngs[k].integers(n[k])``, draw by draw in NumPy's order."""
    for k in range(out.shape[0]):
        slot = generator_at(table, k)
        for b in range(out.shape[1]):
            out[k, b] = integer_below(slot, n[k])


def _layers(env: ParallelEnv[Any, Any, Any]) -> tuple[list[Any], Any]:
    """The wrappers of ``env`` from the outside in, and the env under them."""
    layers = []
    while hasattr(env, "env") and env.env is not env:
        layers.append(env)
        env = env.env
    return layers, env


def unsupported(env: ParallelEnv[Any, Any, Any], model: Any = None) -> str | None:
    """Why the batched loop cannot play ``env`` (and ``model``), or ``None`` if it can.

    Examples:
        >>> from fedbandit_env.wrappers import MessageLoss
        >>> scenario = Scenario(n_agents=3, n_arms=2, horizon=5, setting="neighbours")
        >>> stack = LearnerStack.for_setting("neighbours")
        >>> unsupported(stack.make_env(scenario)) is None
        True
        >>> unsupported(MessageLoss(stack.make_env(scenario), 0.5))
        'the wrapper MessageLoss'
    """
    if model is not None and hasattr(getattr(model, "policy", None), "lstm_actor"):
        return "a recurrent policy (its memory is per trial)"
    layers, base = _layers(env)
    if type(base) is not FederatedMABEnv:
        return f"the env {type(base).__name__}"
    kinds = [type(layer) for layer in layers]
    for kind in kinds:
        if kind not in (LocalStatistics, PrivateRewards, HeldMessages, HorizonFree):
            return f"the wrapper {kind.__name__}"
    if LocalStatistics in kinds and PrivateRewards in kinds:
        return "statistics of private rewards"
    if base.message_dim:
        protocol = base.protocol
        if type(protocol) not in (Broadcast, RandomEdgeGossip) or protocol.public_dim:
            return f"the protocol {protocol!r}"
        if protocol.has_server:
            return "a server"
    space = env.observation_space(env.possible_agents[0])
    if not isinstance(space, spaces.Dict):
        return "a flat observation"
    extra = sorted(set(space.spaces) - MODELLED_KEYS)
    return f"the observation entries {extra}" if extra else None


class BatchedModelRollout:
    """Trials of a saved model advanced together (see the module docstring).

    Args:
        model: A trained SB3 model (or any :class:`~fedbandit_env.rl.team.Predictor`).
        stack: The stack it was trained with.
        scenario: Where it is evaluated.
        deterministic: Its most likely arm instead of a seeded draw.
        block: Steps of random numbers drawn ahead per trial.

    Raises:
        ValueError: If the scenario's stack is one :func:`unsupported` names.

    Examples:
        >>> class Always0:
        ...     def predict(self, obs, deterministic=True):
        ...         return np.zeros(len(obs), dtype=int), None
        >>> scenario = Scenario(n_agents=3, n_arms=2, horizon=6, setting="local")
        >>> runner = BatchedModelRollout(Always0(), LearnerStack.for_setting("local"), scenario)
        >>> t, regret, cost = runner.run(np.random.SeedSequence(0).spawn(2), record_every=3)
        >>> t.tolist(), regret.shape, cost.shape
        ([3, 6], (2, 3, 2), (2, 2))
    """

    def __init__(
        self,
        model: Predictor,
        stack: LearnerStack,
        scenario: Scenario,
        deterministic: bool = False,
        block: int = 512,
    ) -> None:
        self.model, self.stack, self.scenario = model, stack, scenario
        self.deterministic = deterministic
        self.block = max(1, int(block))
        self.env = stack.make_env(scenario)
        reason = unsupported(self.env, model)
        if reason is not None:
            raise ValueError(f"the batched loop does not model {reason}")
        layers, base = _layers(self.env)
        self.base: FederatedMABEnv = base
        self.private = next((w for w in layers if isinstance(w, PrivateRewards)), None)
        self.held = any(isinstance(w, HeldMessages) for w in layers)
        self.horizon_free = any(isinstance(w, HorizonFree) for w in layers)
        self.agents = list(self.env.possible_agents)
        self.space = self.env.observation_space(self.agents[0])
        assert isinstance(self.space, spaces.Dict)
        layout = FlatLayout.of(self.space)
        assert layout is not None  # unsupported() admits only entries with a layout
        self.layout = layout
        self.scaling = scale_box(flat_box(self.space)) if stack.scale else None
        self.horizon = int(base.horizon)

    # ------------------------------------------------------------------ the loop
    def run(
        self,
        children: Sequence[np.random.SeedSequence],
        record_every: int = 1,
        progress: Any = None,
    ) -> tuple[IntArray, FloatArray, FloatArray]:
        """Play one trial per seed (as :func:`~fedbandit_env.runner.rollout.rollout`
        splits it); return ``(t, regret (K, N, R), comm_cost (K, R))``."""
        env, base, k_trials = self.env, self.base, len(children)
        n, m, horizon = len(self.agents), int(base.n_arms), self.horizon
        steps = record_steps(horizon, record_every)
        # ---------------------------------------------------------- each trial's env
        first_obs, reward_rngs, model_rngs, edge_rngs, trees = [], [], [], [], []
        means, gaps, sigma, adjacency, edges, n_edges = [], [], [], [], [], []
        noise = None
        for child in children:
            env_seed, team_seed = split_trial_seed(child)
            obs, _ = env.reset(seed=env_seed)
            first_obs.append(batch_observations(self.space, obs, self.agents, True, None))
            problem = base.problem
            if noise not in (None, problem.noise):
                raise ValueError("the trials' instances mix noise models")
            noise = problem.noise
            means.append(problem.local_means)
            gaps.append(problem.gaps)
            sigma.append(problem.sigma)
            reward_rngs.append(base._reward_rng)
            model_rngs.append(model_generator(team_seed))
            if base.message_dim:
                net = base.protocol.network
                adjacency.append(net.adjacency)
                edges.append(net.edges)
                n_edges.append(net.n_edges)
                edge_rngs.append(base.protocol._rng)
            if self.private is not None:
                trees.append(self.private._tree)
        mu = np.stack(means)  # (K, N, M)
        gap = np.stack(gaps)  # (K, M)
        sig = np.asarray(sigma, dtype=np.float64)[:, None]
        x = np.stack(first_obs).astype(np.float32)  # (K, N, D), unscaled
        flat = np.zeros_like(x)  # the unscaled observation, rewritten every step
        if self.scaling is not None:
            x = x * self.scaling[1] + self.scaling[0]
        gossip = isinstance(base.protocol, RandomEdgeGossip) and bool(base.message_dim)
        if base.message_dim:
            adj = np.stack(adjacency)
            edge_table = np.stack(edges)  # (K, E, 2)
            n_edge = np.asarray(n_edges, dtype=np.int64)
            lo, hi = base.message_bounds
            peer_cost = float(base.link_costs[1])
        # ---------------------------------------------------------- state
        kk, ii = np.meshgrid(np.arange(k_trials), np.arange(n), indexing="ij")
        trial = np.arange(k_trials)
        counts = np.zeros((k_trials, n, m))
        sums = np.zeros((k_trials, n, m))
        prefix = np.zeros((k_trials, n, m))
        width = int(base.message_dim) or m
        if base.message_dim and width not in (m, 2 * m):
            raise ValueError(f"messages of {width} numbers: the learner sends M or 2 M")
        shared = np.zeros((k_trials, n, width), dtype=np.float32)  # what each agent sends
        held = np.zeros((k_trials, n, n, width), dtype=np.float32)
        heard = np.zeros((k_trials, n, n), dtype=np.int8)
        last = np.zeros((k_trials, n, n))
        cum = np.zeros((k_trials, n))
        cost = np.zeros(k_trials)
        out = np.zeros((k_trials, n, steps.size))
        cost_out = np.zeros((k_trials, steps.size))
        sl = self.layout.slices
        clip = self.private.clip if self.private is not None else (0.0, 0.0)
        r = 0
        for start in range(0, horizon, self.block):
            size = min(self.block, horizon - start)
            if noise == "bernoulli":
                draws = np.stack([g.random((size, n)) for g in reward_rngs])
            else:
                draws = np.stack([g.standard_normal((size, n)) for g in reward_rngs])
            stochastic = not self.deterministic
            uniforms = np.stack([g.random((size, n)) for g in model_rngs]) if stochastic else None
            picks = np.zeros((k_trials, size), dtype=np.int64)
            if gossip:
                _draw_below(generator_table(edge_rngs), n_edge, picks)
            for b in range(size):
                t = start + b + 1
                # ---------------------------------------------- act
                batch = x.reshape(k_trials * n, -1)
                if uniforms is None:
                    arms = self._greedy(batch).reshape(k_trials, n)
                else:
                    probs = action_probabilities(self.model, batch)
                    if probs is None:  # no distribution to draw from: its greedy arm
                        arms = self._greedy(batch).reshape(k_trials, n)
                    else:
                        u = uniforms[:, b].reshape(-1)
                        arms = draw_arms(probs, u).reshape(k_trials, n)
                # ---------------------------------------------- the env's step
                pulled = mu[kk, ii, arms]
                if noise == "bernoulli":
                    rewards = (draws[:, b] < pulled).astype(np.float64)
                else:
                    rewards = pulled + sig * draws[:, b]
                    if noise == "clipped_gaussian":
                        rewards.clip(0.0, 1.0, out=rewards)
                cum += gap[kk, arms]
                if base.message_dim:
                    sent = shared.astype(np.float64)
                    if not (np.isfinite(sent).all() and (sent >= lo).all() and (sent <= hi).all()):
                        raise ValueError(f"a message left the bounds ({lo}, {hi})")
                    if gossip:  # one edge a trial: write its two messages only
                        ends = edge_table[trial, picks[:, b]]  # (K, 2)
                        one, two = ends[:, 0], ends[:, 1]
                        mask = np.zeros((k_trials, n, n), dtype=bool)
                        mask[trial, one, two] = mask[trial, two, one] = True
                        inbox = np.zeros((k_trials, n, n, width), dtype=np.float32)
                        inbox[trial, one, two] = sent[trial, two]
                        inbox[trial, two, one] = sent[trial, one]
                        cost += peer_cost  # one call
                    else:
                        mask = adj
                        inbox = np.where(mask[..., None], sent[:, None, :, :], 0.0)
                        inbox = inbox.astype(np.float32)
                        cost += peer_cost * n_edge
                # ---------------------------------------------- the learner's wrappers
                if self.private is not None:
                    values = np.zeros((k_trials, n, m))
                    present = np.zeros((k_trials, n, m), dtype=bool)
                    values[kk, ii, arms] = np.clip(rewards, clip[0], clip[1])
                    present[kk, ii, arms] = True
                    counts[kk, ii, arms] += 1.0
                    previous = prefix
                    prefix = np.stack(
                        [
                            tree.step(values[j].ravel(), present[j].ravel()).reshape(n, m)
                            for j, tree in enumerate(trees)
                        ]
                    )
                    seen = (prefix[kk, ii, arms] - previous[kk, ii, arms]).astype(np.float32)
                    totals = prefix
                else:
                    seen = rewards.astype(np.float32)
                    counts[kk, ii, arms] += 1.0
                    sums[kk, ii, arms] += seen.astype(np.float64)
                    totals = sums
                agent_means = np.divide(
                    totals, counts, out=np.zeros_like(totals), where=counts > 0
                ).astype(np.float32)
                shared = agent_means
                if self.horizon_free or width == 2 * m:
                    log_step, shares, bonus = horizon_free_features(t, counts)
                    if width == 2 * m:  # means, then pull shares
                        shared = np.concatenate([agent_means, shares], axis=-1)
                # ---------------------------------------------- the next observation
                raw = flat  # every entry is rewritten below
                if "arm" in sl:
                    raw[..., sl["arm"]] = 0.0
                    raw[kk, ii, sl["arm"].start + arms] = 1.0
                raw[..., sl["reward"]] = seen[..., None]
                if "step" in sl:
                    raw[..., sl["step"]] = np.float32(t)
                if self.horizon_free:
                    raw[..., sl["log_step"]] = log_step
                    raw[..., sl["shares"]] = shares
                    raw[..., sl["bonus"]] = bonus
                key = "private_means" if self.private is not None else "means"
                if key in sl:
                    raw[..., sl[key]] = agent_means
                if "counts" in sl:
                    raw[..., sl["counts"]] = counts
                if base.message_dim:
                    raw[..., sl["messages"]] = inbox.reshape(k_trials, n, -1)
                    raw[..., sl["mask"]] = mask
                    if self.held and gossip:
                        held[trial, one, two] = inbox[trial, one, two]
                        held[trial, two, one] = inbox[trial, two, one]
                        heard[trial, one, two] = heard[trial, two, one] = 1
                        last[trial, one, two] = last[trial, two, one] = float(t)
                    elif self.held:
                        held = np.where(mask[..., None], inbox, held)
                        heard |= mask
                        last = np.where(mask, float(t), last)
                    if self.held:
                        age = np.minimum(t - last, horizon).astype(np.float32)
                        raw[..., sl["held"]] = held.reshape(k_trials, n, -1)
                        raw[..., sl["heard"]] = heard
                        if "age" in sl:
                            raw[..., sl["age"]] = age
                        if "log_age" in sl:
                            log_age = np.log1p(age.astype(np.float64)).astype(np.float32)
                            raw[..., sl["log_age"]] = log_age
                if self.scaling is not None:
                    np.multiply(raw, self.scaling[1], out=x)
                    x += self.scaling[0]
                else:
                    x = raw
                if r < steps.size and t == steps[r]:
                    out[:, :, r] = cum
                    cost_out[:, r] = cost
                    r += 1
            if progress is not None:
                progress.update(size * k_trials)
        return steps, out, cost_out

    def _greedy(self, batch: np.ndarray) -> np.ndarray:
        arms, _ = self.model.predict(batch, deterministic=True)
        return np.asarray(arms, dtype=np.int64).reshape(-1)


def batched_trials(
    model: Predictor,
    stack: LearnerStack,
    scenario: Scenario,
    children: Sequence[np.random.SeedSequence],
    record_every: int = 1,
    deterministic: bool = False,
    batch: int = 128,
    progress: bool = False,
    label: str = "model",
) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
    """Every trial of ``children`` through :class:`BatchedModelRollout`, ``batch`` trials at
    a time; returns ``(t, regret (K, N, R), comm_cost (K, R), seconds (K,))``, each
    trial's seconds its share of its batch's wall time.

    Examples:
        >>> class Always1:
        ...     def predict(self, obs, deterministic=True):
        ...         return np.ones(len(obs), dtype=int), None
        >>> scenario = Scenario(n_agents=2, n_arms=3, horizon=4, setting="neighbours")
        >>> t, regret, cost, seconds = batched_trials(
        ...     Always1(), LearnerStack.for_setting("neighbours"), scenario,
        ...     np.random.SeedSequence(1).spawn(3), record_every=2, batch=2)
        >>> regret.shape, cost[:, -1].tolist(), seconds.shape
        ((3, 2, 2), [4.0, 4.0, 4.0], (3,))
    """
    runner = BatchedModelRollout(model, stack, scenario, deterministic)
    total = len(children) * scenario.horizon
    bar = tqdm(total=total, desc=label, unit="step", disable=not progress, leave=False)
    parts, seconds = [], []
    t: IntArray = np.zeros(0, dtype=np.int64)
    with bar:
        for first in range(0, len(children), batch):
            chunk = list(children[first : first + batch])
            begin = time.perf_counter()
            t, regret, cost = runner.run(chunk, record_every, bar)
            seconds += [(time.perf_counter() - begin) / len(chunk)] * len(chunk)
            parts.append((regret, cost))
    runner.env.close()
    return (
        t,
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.asarray(seconds),
    )


__all__ = ["MODELLED_KEYS", "BatchedModelRollout", "batched_trials", "unsupported"]
