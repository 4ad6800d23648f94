"""``fedbandit bench`` from Python: several policies (ids, saved models, specs, or a
user's own factories) on one scenario, in one information setting, with the table's
floor (random) and pooled reference (the privileged oracle) added.

Examples:
    >>> from fedbandit_env.policies import FixedArm
    >>> from fedbandit_env.scenario.scenario import Scenario
    >>> s = Scenario(n_agents=3, n_arms=3, horizon=50)
    >>> curves = compare({"arm 0": FixedArm, "ucb": "local_ucb"}, s, trials=2)
    >>> [c.policy for c in curves]
    ['arm 0', 'ucb', 'random', 'oracle_ucb']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fedbandit_env import registry
from fedbandit_env.runner.evaluate import as_spec, evaluate
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.scenario.scenario import Scenario

PolicyLike = str | registry.PolicySpec | Callable[..., Any]
"""What :func:`compare` takes: an id, a saved model ``"ppo:path.zip"``, a spec, a factory."""


def floor_and_pooled(linear: bool) -> list[str]:
    """The references every table shows (issue 14: "random and the oracle always
    shown"): the policies registered with the tags ``floor`` then ``pooled`` that play
    the scenario's bandit. The pooled oracle is a reference outside the setting, not an
    upper bound: cooperative Thompson sampling beats its UCB index (docs/yardstick.md).

    Examples:
        >>> floor_and_pooled(False), floor_and_pooled(True)
        (['random', 'oracle_ucb'], ['pooled_lin_ucb'])
    """
    bandit = "linear" if linear else "mab"
    return registry.tagged("floor", bandit) + registry.tagged("pooled", bandit)


def policy_name(policy: str | registry.PolicySpec | Callable[..., Any]) -> str:
    """How a sweep names a policy in keys, ``sweep.json`` and tables: an id or saved
    model as given, a spec by its id, a factory by its import path.

    Examples:
        >>> from fedbandit_env.policies import FixedArm
        >>> policy_name("random"), policy_name(FixedArm)
        ('random', 'fedbandit_env.policies:FixedArm')
    """
    if isinstance(policy, str):
        return policy
    if isinstance(policy, registry.PolicySpec):
        return policy.id
    if not callable(policy):
        raise TypeError(
            f"policy must be an id, a saved model, a PolicySpec or a factory, got {policy!r}"
        )
    module = getattr(policy, "__module__", "") or ""
    return f"{module}:{getattr(policy, '__qualname__', type(policy).__name__)}"


def policy_label(policy: str | registry.PolicySpec | Callable[..., Any]) -> str:
    """A policy's name in result tables: the id, or a factory's short name.

    Examples:
        >>> from fedbandit_env.policies import FixedArm
        >>> policy_label("random"), policy_label(FixedArm)
        ('random', 'FixedArm')
    """
    if isinstance(policy, str | registry.PolicySpec):
        return policy_name(policy)
    return str(getattr(policy, "__name__", policy_name(policy)))


def _labelled(policies: Sequence[PolicyLike] | Mapping[str, PolicyLike]) -> dict[str, PolicyLike]:
    """``{label: policy}``: a mapping as given; a list labelled by id, or a factory's name."""
    if isinstance(policies, Mapping):
        return dict(policies)
    labels = [p if isinstance(p, str) else as_spec(p).id for p in policies]  # type: ignore[union-attr]
    if len(set(labels)) != len(labels):
        raise ValueError(f"policies lists a label twice: {labels}; pass a {{label: policy}} dict")
    return dict(zip(labels, policies, strict=True))


def compare(
    policies: Sequence[PolicyLike] | Mapping[str, PolicyLike],
    scenario: Scenario,
    *,
    trials: int = 10,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    bounds: bool = True,
    record_every: int | None = None,
    workers: int = 1,
    progress: bool = False,
) -> list[RegretCurves]:
    """Evaluate every policy on ``scenario`` (its setting applies to all of them) with
    the same seeds, as ``fedbandit bench`` does.

    Args:
        policies: A list (labelled by id, or a factory's name) or a ``{label: policy}``
            mapping.
        scenario: The setting; its ``instances`` decide fixed or held-out instances.
        trials: Trials per policy (trial ``j`` plays the same instance for every policy).
        seed: Seed of the experiment.
        options: Constructor options per label (``{"fed_ucb": {"epsilon": 1.0}}``).
        bounds: Add :func:`floor_and_pooled` (those not already listed).
        record_every: Record every ``k`` steps (default ``T // 100``).
        workers: Threads of the fast path.
        progress: Show progress bars.

    Returns:
        One :class:`RegretCurves` per policy, in order, bounds last
        (:func:`~fedbandit_env.runner.results.format_table` prints them).
    """
    items = _labelled(policies)
    if not items:
        raise ValueError("policies must name at least one policy")
    unknown = set(options or {}) - set(items)
    if unknown:
        raise ValueError(f"options name labels that are not compared: {sorted(unknown)}")
    if bounds:
        named = {p for p in items.values() if isinstance(p, str)}
        for pid in floor_and_pooled(scenario.linear):
            if pid not in named and pid not in items:
                items[pid] = pid
    every = record_every or max(1, scenario.horizon // 100)
    return [
        evaluate(policy, scenario, (options or {}).get(label), trials=trials, seed=seed,
                 record_every=every, workers=workers, progress=progress, label=label)
        for label, policy in items.items()
    ]  # fmt: skip


__all__ = ["PolicyLike", "compare", "floor_and_pooled", "policy_label", "policy_name"]
