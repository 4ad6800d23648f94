"""Batched evaluation of a saved model on the vector env: every agent of many trials in
one forward pass.

Evaluated through PettingZoo (:class:`~fedbandit_env.rl.team.ModelTeam`), a model costs
one env step and one small forward pass per trial and step. Here ``K`` trials advance
together on the vector env (:mod:`fedbandit_env.vector`): the learner's stack in vector
form (:meth:`LearnerStack.make_vec <fedbandit_env.rl.LearnerStack.make_vec>`), its
observations flattened as the PettingZoo path flattens them into one ``(K N, D)``
batch, and the network run once per step for all of them. There is no env code here:
the vector env replays each trial's PettingZoo env (env ``k`` reset with trial ``k``'s
env seed: the same instance, rewards, messages and private noise), and the model's
action uniforms come from each trial's model stream in blocks (``random((B, N))`` gives
the numbers of ``B`` calls of ``random(N)``). A recurrent model's memory is one row per
agent of every trial, zeroed at the trials' start, as each trial's
:class:`~fedbandit_env.rl.team.ModelTeam` starts it.

The one difference is floating point inside the network: a batch of ``K N`` rows may
round an action probability in its last bit differently from a batch of ``N``, which
changes a sampled arm only when a uniform falls within about 1e-7 of a boundary
(``tests/rl/test_batched.py`` checks arms and regret equal to the PettingZoo path's).

A stack without a vector form (random delays, link failures, the ``Gossip`` wrapper,
other wrappers, a protocol whose copies differ by receiver) is reported by
:func:`unsupported`, and
:func:`~fedbandit_env.runner.evaluate.evaluate` then takes the PettingZoo path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from tqdm.auto import tqdm

from fedbandit_env.envs.federated_mab import FederatedMABEnv
from fedbandit_env.rl.common import scale_box
from fedbandit_env.rl.stack import LearnerStack
from fedbandit_env.rl.team import (
    Predictor,
    action_probabilities,
    draw_arms,
    draw_scores,
    is_recurrent,
    recurrent_probabilities,
    score_arms,
    score_sampler,
)
from fedbandit_env.scenario.trial import record_steps
from fedbandit_env.seeding import model_generator, split_trial_seed
from fedbandit_env.type_aliases import FloatArray, IntArray
from fedbandit_env.vector.wrappers.flatten import flat_rows
from fedbandit_env.wrappers.base import vector_form
from fedbandit_env.wrappers.flatten import FlatLayout, flat_box
from fedbandit_env.wrappers.local_statistics import LocalStatistics
from fedbandit_env.wrappers.message_delay import MessageDelay
from fedbandit_env.wrappers.privacy import PrivateRewards


def _layers(env: ParallelEnv[Any, Any, Any]) -> tuple[list[Any], Any]:
    """The wrappers of ``env`` from the outside in, and the env under them."""
    layers = []
    while hasattr(env, "env") and env.env is not env:
        layers.append(env)
        env = env.env
    return layers, env


def unsupported(env: ParallelEnv[Any, Any, Any]) -> str | None:
    """Why the batched loop cannot play ``env``, or ``None`` if it can (every model runs on
    it, recurrent ones too).

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> from fedbandit_env.wrappers import LinkFailures
        >>> scenario = Scenario(n_agents=3, n_arms=2, horizon=5, setting="neighbours")
        >>> stack = LearnerStack.for_setting("neighbours")
        >>> unsupported(stack.make_env(scenario)) is None
        True
        >>> unsupported(LinkFailures(stack.make_env(scenario), 0.5, 0.5))
        'the wrapper LinkFailures'
    """
    layers, base = _layers(env)
    if type(base) is not FederatedMABEnv:
        return f"the env {type(base).__name__}"
    kinds = [type(layer) for layer in layers]
    for layer in layers:
        kind = type(layer)
        if vector_form(kind) is None:  # named once, by the wrapper itself
            return f"the wrapper {kind.__name__}"
        if kind is MessageDelay and layer.max_delay != layer.delay:
            return "random message delays"
    if LocalStatistics in kinds and PrivateRewards in kinds:
        return "statistics of private rewards"
    if base.message_dim and not base.protocol.per_sender:
        return f"the protocol {base.protocol!r} (its copies differ by receiver)"
    space = env.observation_space(env.possible_agents[0])
    if FlatLayout.of(space) is None:
        return "an observation without a flat layout"
    return None


class BatchedModelRollout:
    """Trials of a saved model advanced together on the vector env (see the module
    docstring).

    Args:
        model: A trained SB3 model (or any :class:`~fedbandit_env.rl.team.Predictor`).
        stack: The stack it was trained with.
        scenario: Where it is evaluated.
        deterministic: Its most likely arm instead of a seeded draw.
        block: Steps of action uniforms drawn ahead per trial.

    Raises:
        ValueError: If the scenario's stack is one :func:`unsupported` names.

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
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
        scenario: Any,
        deterministic: bool = False,
        block: int = 512,
    ) -> None:
        self.model, self.stack, self.scenario = model, stack, scenario
        self.deterministic = deterministic
        self.recurrent = is_recurrent(model)  # a memory per agent of every trial
        self.scores = score_sampler(model)  # normals per arm instead of one uniform
        self.block = max(1, int(block))
        probe = stack.make_env(scenario)
        reason = unsupported(probe)
        if reason is not None:
            raise ValueError(f"the batched loop does not model {reason}")
        agent = probe.possible_agents[0]
        self.space = probe.observation_space(agent)
        assert isinstance(self.space, spaces.Dict)
        layout = FlatLayout.of(self.space)
        assert layout is not None  # unsupported() admits only spaces with a layout
        self.layout = layout
        self.scaling = scale_box(flat_box(self.space)) if stack.scale else None
        self.n_agents = len(probe.possible_agents)
        self.horizon = int(scenario.horizon)
        probe.close()

    def run(
        self,
        children: Sequence[np.random.SeedSequence],
        record_every: int = 1,
        progress: Any = None,
    ) -> tuple[IntArray, FloatArray, FloatArray]:
        """Play one trial per seed (as :func:`~fedbandit_env.runner.rollout.rollout`
        splits it); return ``(t, regret (K, N, R), comm_cost (K, R))``."""
        k_trials, n, horizon = len(children), self.n_agents, self.horizon
        steps = record_steps(horizon, record_every)
        venv = self.stack.make_vec(self.scenario, k_trials)
        env_seeds, model_rngs = [], []
        for child in children:
            env_seed, team_seed = split_trial_seed(child)
            env_seeds.append(int(env_seed))
            model_rngs.append(model_generator(team_seed))
        obs, _ = venv.reset(seed=env_seeds)
        self._memory: Any = None  # a recurrent model's, every agent of every trial
        public = int(venv.protocol.public_dim) if venv.message_dim else 0
        raw = np.zeros((k_trials * n, self.layout.width), dtype=np.float32)
        x = np.zeros_like(raw)
        out = np.zeros((k_trials, n, steps.size))
        cost_out = np.zeros((k_trials, steps.size))
        r = 0
        for start in range(0, horizon, self.block):
            size = min(self.block, horizon - start)
            uniforms = None
            if not self.deterministic and self.scores:  # the posterior net's normals
                m = score_arms(self.model)
                uniforms = np.stack([g.standard_normal((size, n, m)) for g in model_rngs])
            elif not self.deterministic:
                uniforms = np.stack([g.random((size, n)) for g in model_rngs])
            for b in range(size):
                t = start + b + 1
                flat_rows(obs, self.layout, public, raw)
                if self.scaling is not None:
                    np.multiply(raw, self.scaling[1], out=x)
                    x += self.scaling[0]
                else:
                    x = raw
                arms = self._arms(x, None if uniforms is None else uniforms[:, b])
                messages = self.stack.vector_messages(obs) if venv.message_dim else None
                obs, _, _, _, infos = venv.step(arms.reshape(k_trials, n), messages)
                if r < steps.size and t == steps[r]:
                    out[:, :, r] = infos["cumulative_regret"]
                    cost_out[:, r] = infos["cumulative_comm_cost"]
                    r += 1
            if progress is not None:
                progress.update(size * k_trials)
        venv.close()
        return steps, out, cost_out

    def _arms(self, batch: np.ndarray, uniforms: np.ndarray | None) -> np.ndarray:
        if self.scores:
            normals = None if uniforms is None else uniforms.reshape(len(batch), -1)
            return draw_scores(self.model, batch, normals)
        if self.recurrent:
            step, self._memory = recurrent_probabilities(self.model, batch, self._memory)
            if uniforms is None:
                return np.asarray(step.argmax(axis=1), dtype=np.int64)
            return draw_arms(step, uniforms.reshape(-1))
        if uniforms is not None:
            probs = action_probabilities(self.model, batch)
            if probs is not None:
                return draw_arms(probs, uniforms.reshape(-1))
        arms, _ = self.model.predict(batch, deterministic=True)
        return np.asarray(arms, dtype=np.int64).reshape(-1)


def batched_trials(
    model: Predictor,
    stack: LearnerStack,
    scenario: Any,
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
        >>> from fedbandit_env.scenario.scenario import Scenario
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
    return (
        t,
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.asarray(seconds),
    )


__all__ = [
    "BatchedModelRollout",
    "batched_trials",
    "unsupported",
]
