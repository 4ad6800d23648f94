"""Learned references: posterior nets trained by ``fedbandit train ppo --net posterior``,
shipped as weights, benched as any policy.

Each model in ``models/`` is a ``<name>.npz`` of the network's arrays
(:func:`~fedbandit_env.rl.posterior_net.save_weights`) and a ``<name>.json`` with what
produced it (the training command, its seed, budget, device and minutes, the learner's
stack and the train-split validation that chose the checkpoint). ``baselines.registration``
registers one policy per model (tag ``learned``), built by :func:`learned`:
a :class:`~baselines.learned.policy.LearnedPolicy` that keeps the team posterior itself
and draws its arms from the network's scores. :func:`export_model` turns a trained
``model.zip`` into such a pair.

Examples:
    >>> from baselines.learned import MODELS, shipped
    >>> MODELS.name
    'models'
    >>> all(name.startswith("learned_") for name in shipped())
    True
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baselines.learned.policies import LearnedPolicy
from fedbandit_env.files import write_text_atomic
from fedbandit_env.rl.posterior_net import load_weights, save_weights

MODELS = Path(__file__).with_name("models")
"""The shipped models: ``<name>.npz`` and ``<name>.json``."""


def shipped() -> list[str]:
    """The names of the shipped models (those with both files).

    Examples:
        >>> isinstance(shipped(), list)
        True
    """
    return sorted(p.stem for p in MODELS.glob("*.npz") if p.with_suffix(".json").is_file())


def model_record(name: str) -> dict[str, Any]:
    """What produced the shipped model ``name`` (its ``.json``).

    Raises:
        ValueError: For a name that is not shipped.
    """
    path = MODELS / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"no shipped learned model {name!r}; shipped: {shipped()}")
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def learned(name: str, deterministic: bool = False, **kwargs: Any) -> LearnedPolicy:
    """The shipped model ``name`` as a policy (``kwargs``: :class:`LearnedPolicy`'s
    ``epsilon`` for a private model at another privacy level, ``deterministic``).

    Raises:
        ValueError: For a name that is not shipped.
    """
    record = model_record(name)
    stack = record["stack"]
    options: dict[str, Any] = {"epsilon": stack.get("epsilon"), "name": name}
    options.update(kwargs)
    weights = load_weights(MODELS / f"{name}.npz")
    policy = LearnedPolicy(weights, deterministic=deterministic, **options)
    policy.tuned_on = record["scenario"]  # evaluate warns at other conditions
    return policy


def learned_options(options: dict[str, Any], problem: Any) -> dict[str, Any]:
    """A private model's constructor arguments from the setting options: its ``epsilon``
    (the setting's; the model was trained at the one in its record).

    Examples:
        >>> learned_options({"epsilon": 2.0, "rounds": 3}, None)
        {'epsilon': 2.0}
    """
    return {"epsilon": options.get("epsilon", 1.0)}


def export_model(model_path: str | Path, name: str, record: dict[str, Any],
                 folder: str | Path = MODELS) -> Path:  # fmt: skip
    """Write a trained posterior net (``model.zip`` of ``fedbandit train ppo --net
    posterior``) as ``folder/<name>.npz`` with ``record`` (plus its stack) as
    ``<name>.json``; returns the ``.npz``.

    Raises:
        ValueError: If the model is not a posterior net.
    """
    from fedbandit_env.rl.posterior_policy import PosteriorArmPolicy, export_weights
    from fedbandit_env.rl.stack import load_model

    _, model, stack = load_model(f"ppo:{model_path}")
    if not isinstance(model.policy, PosteriorArmPolicy):
        raise ValueError(f"{model_path} is not a posterior net (fedbandit train --net posterior)")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = save_weights(out / f"{name}.npz", export_weights(model.policy))
    from dataclasses import asdict

    full = {**record, "stack": asdict(stack)}
    write_text_atomic(out / f"{name}.json", json.dumps(full, indent=2) + "\n")
    return path


__all__ = [
    "MODELS",
    "LearnedPolicy",
    "export_model",
    "learned",
    "learned_options",
    "model_record",
    "shipped",
]
