"""Tune a parametric vector policy on the train split: the cross-entropy method on the
vector env, every candidate of a generation played on the same instances and seeds
(common random numbers), all of them in one batch.

A tunable policy is a registered :class:`~fedbandit_env.vector.policy.VectorPolicy`
whose class declares ``TUNABLE = {name: (low, high, default)}`` and whose constructor
takes each parameter either as a number or as an array with one value per env (so the
``P`` candidates of a generation run as ``P * K`` envs of one vector env). Each
generation draws ``P`` candidates from a Gaussian in the box scaled to ``[0, 1]``
(clipped to it), plays each on the same ``K`` train episodes (env seeds and policy
seeds drawn fresh per generation, shared by the candidates), keeps the best fifth by
mean final regret per agent, and moves the Gaussian to them (smoothed; a floor on its
spread). The result is the final mean, saved with the conditions it was tuned for:
``fedbandit bench --policies tuned:<file>`` plays it (warning on other conditions).

Examples:
    >>> from fedbandit_env.scenario import Scenario
    >>> scenario = Scenario(n_agents=3, n_arms=2, horizon=20, setting="neighbours",
    ...                     instance="biased", instances="train")
    >>> result = tune("index_ts", scenario, generations=2, population=4, episodes=2,
    ...               progress=False)
    >>> sorted(result.parameters), len(result.history)
    (['bonus', 'draw_scale', 'prior_mean', 'prior_strength'], 2)
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fedbandit_env import registry
from fedbandit_env.runner.conditions import UntrainedConditionsWarning, untuned_conditions
from fedbandit_env.runner.vector_trials import run_episodes
from fedbandit_env.seeding import spawn

FORMAT = "fedbandit-tuned/1"
"""The saved file's format tag."""


@dataclass
class TuneResult:
    """What :func:`tune` found and the conditions it was tuned for (saved as JSON).

    Attributes:
        policy: The tuned policy's registry id.
        parameters: The tuned values.
        scenario: The scenario tuned on (``Scenario.to_dict``; train instances).
        agent_steps: Agent-steps played in the search.
        seconds: Its wall time.
        history: Per generation: the mean's parameters, the elite's and the
            population's mean regret.
        seed: The search's seed.
    """

    policy: str
    parameters: dict[str, float]
    scenario: dict[str, Any]
    agent_steps: int = 0
    seconds: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    seed: int = 0

    def save(self, path: str | Path) -> Path:
        """Write the result as JSON (parents created); returns the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"format": FORMAT, **asdict(self)}, indent=2) + "\n")
        return out

    @classmethod
    def load(cls, path: str | Path) -> TuneResult:
        """Read a saved result.

        Raises:
            ValueError: If the file is not a saved tuning result (naming the file).
        """
        source = Path(path)
        try:
            data = json.loads(source.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"{source}: not a saved tuning result ({err})") from None
        if not isinstance(data, dict) or data.pop("format", None) != FORMAT:
            raise ValueError(f"{source}: not a saved tuning result (no format {FORMAT!r})")
        try:
            result = cls(**data)
        except TypeError as err:
            raise ValueError(f"{source}: not a saved tuning result ({err})") from None
        if not isinstance(result.scenario, dict):
            raise ValueError(
                f"{source}: 'scenario' must be the scenario tuned on (a JSON object), got "
                f"{result.scenario!r}"
            )
        values = result.parameters
        if not isinstance(values, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and np.isfinite(v)
            for v in values.values()
        ):
            raise ValueError(
                f"{source}: 'parameters' must map names to finite numbers, got {values!r}"
            )
        return result


def tunable_box(policy: str) -> dict[str, tuple[float, float, float]]:
    """The ``TUNABLE`` box the policy ``policy`` declares.

    Raises:
        ValueError: If the policy declares none.

    Examples:
        >>> sorted(tunable_box("index_ts"))
        ['bonus', 'draw_scale', 'prior_mean', 'prior_strength']
    """
    spec = registry.spec(policy)
    factory = registry.load_entry_point(spec.entry_point, f"entry point of {policy!r}")
    box = getattr(factory, "TUNABLE", None)
    if not isinstance(box, Mapping) or not box:
        raise ValueError(
            f"{policy} declares no TUNABLE parameters (a VectorPolicy class with "
            "TUNABLE = {name: (low, high, default)} can be tuned)"
        )
    return {str(k): (float(v[0]), float(v[1]), float(v[2])) for k, v in box.items()}


def _play(
    policy: str, scenario: Any, values: dict[str, np.ndarray], seeds: list[Any], fixed: Any
) -> np.ndarray:
    """Mean final regret per agent of each env: env ``j`` plays episode seed ``seeds[j]``
    with parameter values ``values[name][j]``."""
    policy_obj = registry.load_entry_point(registry.spec(policy).entry_point, policy)(
        **{**fixed, **values}
    )
    return run_episodes(policy_obj, scenario, seeds)


def tune(
    policy: str,
    scenario: Any,
    generations: int = 25,
    population: int = 24,
    episodes: int = 64,
    elite: float = 0.2,
    seed: int = 0,
    progress: bool = True,
    fixed: Mapping[str, Any] | None = None,
) -> TuneResult:
    """Cross-entropy search of ``policy``'s ``TUNABLE`` parameters on ``scenario`` (whose
    instances must be drawn from the train split); see the module docstring.

    Args:
        policy: A registered tunable vector policy.
        scenario: Where to tune (``instances="train"``).
        generations: Search steps.
        population: Candidates per generation (``P``).
        episodes: Train episodes each candidate plays per generation (``K``); the
            budget is ``generations * P * K * N * T`` agent-steps.
        elite: Share of each generation the Gaussian moves to.
        seed: The search's seed (candidates, instances, the policy's draws).
        progress: Show a progress bar.
        fixed: Constructor arguments that are not searched (``epsilon``, ...).

    Raises:
        ValueError: On held-out or fixed instances, or bad search sizes.
    """
    if scenario.instances != "train":
        raise ValueError(
            f"tune on the train split (instances='train'), got {scenario.instances!r}: "
            "held-out instances are for evaluating what was tuned"
        )
    for name, value in (("generations", generations), ("population", population),
                        ("episodes", episodes)):  # fmt: skip
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if not 0.0 < elite <= 1.0:
        raise ValueError(f"elite must lie in (0, 1], got {elite!r}")
    box = tunable_box(policy)
    names = list(box)
    low = np.array([box[k][0] for k in names])
    high = np.array([box[k][1] for k in names])
    mean = (np.array([box[k][2] for k in names]) - low) / (high - low)
    spread = np.full(len(names), 0.3)
    rng = np.random.default_rng(seed)
    keep = max(2, round(elite * population))
    history: list[dict[str, Any]] = []
    steps_each = scenario.n_agents * scenario.horizon
    total = generations * population * episodes * steps_each
    begin = time.perf_counter()
    bar = tqdm(total=total, desc=f"tune {policy}", unit="agent-step", unit_scale=True,
               disable=not progress, leave=False)  # fmt: skip
    with bar:
        for g in range(generations):
            unit = np.clip(mean + spread * rng.standard_normal((population, len(names))), 0, 1)
            unit[0] = mean  # the current mean always competes
            values = low + unit * (high - low)
            seeds = spawn(int(rng.integers(2**63)), episodes)
            per_env = {k: np.repeat(values[:, i], episodes) for i, k in enumerate(names)}
            regret = _play(policy, scenario, per_env, seeds * population, dict(fixed or {}))
            scores = regret.reshape(population, episodes).mean(axis=1)
            best = np.argsort(scores, kind="stable")[:keep]
            mean = 0.3 * mean + 0.7 * unit[best].mean(axis=0)
            spread = np.maximum(0.3 * spread + 0.7 * unit[best].std(axis=0), 0.02)
            history.append(
                {
                    "generation": g,
                    "mean": dict(zip(names, (low + mean * (high - low)).tolist(), strict=True)),
                    "elite_regret": float(scores[best].mean()),
                    "population_regret": float(scores.mean()),
                }
            )
            bar.update(population * episodes * steps_each)
            bar.set_postfix(elite=f"{scores[best].mean():.2f}")
    found = dict(zip(names, (low + mean * (high - low)).tolist(), strict=True))
    return TuneResult(
        policy, found, scenario.to_dict(), agent_steps=total,
        seconds=time.perf_counter() - begin, history=history, seed=seed,
    )  # fmt: skip


def tuned_policy(path: str | Path, scenario: Any) -> tuple[registry.PolicySpec, str]:
    """The saved result at ``path`` as a spec to evaluate on ``scenario`` and its label
    (``tuned:<file stem>``); warns where ``scenario`` differs from what it was tuned for
    (another setting, instance kind, size or horizon; instances other than drawn ones).

    Examples:
        >>> import tempfile
        >>> from fedbandit_env.scenario import Scenario
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=20, setting="neighbours",
        ...              instances="train")
        >>> path = TuneResult("index_ts", {"bonus": 0.5}, s.to_dict()).save(
        ...     tempfile.mkdtemp() + "/t.json")
        >>> spec, label = tuned_policy(path, s)
        >>> spec.id, spec.kwargs["bonus"], label
        ('t', 0.5, 'tuned:t')
    """
    result = TuneResult.load(path)
    if result.policy not in registry.policy_ids():
        raise ValueError(f"{path}: tuned a policy that is not registered: {result.policy!r}")
    base = registry.spec(result.policy)
    box = tunable_box(result.policy)
    unknown = sorted(set(result.parameters) - set(box))
    if unknown:
        raise ValueError(
            f"{path}: {result.policy} has no tunable parameter(s) {unknown} (it tunes "
            f"{sorted(box)})"
        )
    differ = untuned_conditions(result.scenario, scenario)
    if differ:
        warnings.warn(
            f"{path} runs on {', '.join(differ)}: its parameters were not tuned for this",
            UntrainedConditionsWarning,
            stacklevel=3,
        )
    stem = Path(path).stem
    name = stem if registry._ID.match(stem) else "tuned"
    spec = registry.PolicySpec(
        name, base.entry_point, description=f"{result.policy} tuned ({path})",
        family=base.family, kwargs={**base.kwargs, **result.parameters},
        options_entry_point=base.options_entry_point, settings=base.settings,
    )  # fmt: skip
    return spec, f"tuned:{stem}"


__all__ = ["FORMAT", "TuneResult", "tunable_box", "tune", "tuned_policy"]
