"""``make_vec(scenario, num_envs, needs)``: the batched counterpart of
``scenario.make_env(needs)``.

The scenario is read through its methods (``plan``, ``protocol_for``) and fields, so
this module imports nothing from the scenario package (the vector env lies below it).
"""

from __future__ import annotations

from typing import Any

from fedbandit_env.policies import Requirements
from fedbandit_env.vector.env import FederatedMABVecEnv
from fedbandit_env.vector.linear import FederatedLinearVecEnv


def make_vec(
    scenario: Any,
    num_envs: int,
    needs: Requirements | None = None,
    device: Any = None,
    validate: bool | None = None,
) -> Any:
    """``num_envs`` copies of the env a policy with ``needs`` gets in ``scenario``:
    env ``b`` of ``reset(seed=s)`` is ``scenario.make_env(needs)`` reset with ``s + b``.

    Args:
        scenario: A :class:`~fedbandit_env.runner.Scenario` of a multi-armed kind.
        num_envs: ``B``.
        needs: What the policy asks for (messages, protocol, privacy), merged with the
            scenario's setting as :meth:`Scenario.make_env` merges it.
        device: Where the arrays live: ``None`` (NumPy, the replay reference) or a torch
            device (``"cuda"``, ``"cpu"``, ``"auto"``; :mod:`fedbandit_env.backend`).
        validate: Check the actions' values every step (default: on NumPy only).

    Raises:
        ValueError: For a stack layer (clipping, faults) that has no vector form yet
            (named), one without a device form on a torch device, or a linear scenario
            with any layer or on a device.

    Returns:
        A :class:`~fedbandit_env.vector.FederatedMABVecEnv`, wrapped in the vector
        forms of the scenario's layers (``+private``:
        :class:`~fedbandit_env.vector.wrappers.VecPrivateRewards`); for a linear
        scenario a :class:`~fedbandit_env.vector.FederatedLinearVecEnv` (messages of the
        policy's width plus one ``(d + 1)^2`` statistic, as ``make_env`` builds them).

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=5, setting="neighbours")
        >>> venv = make_vec(s, 4, Requirements(message_dim=2))
        >>> venv.reset(seed=1)[0]["mask"].shape, type(venv.protocol).__name__
        ((4, 3, 3), 'Broadcast')
    """
    if scenario.linear:
        return _linear_vec(scenario, num_envs, needs, device, validate)
    plan = scenario.plan(needs)
    merged = scenario._merged(needs)
    protocol = scenario.protocol_for(needs)
    fixed = scenario.instances == "fixed"
    venv = FederatedMABVecEnv(
        scenario.problem() if fixed else scenario.distribution(),
        scenario.network(),
        protocol,
        horizon=scenario.horizon,
        message_dim=merged.message_dim,
        link_costs=scenario.link_costs,
        split="train" if fixed else scenario.instances,
        num_envs=num_envs,
        device=device,
        validate=validate,
    )
    return plan.build_vector(venv)


def _linear_vec(
    scenario: Any, num_envs: int, needs: Requirements | None, device: Any, validate: bool | None
) -> FederatedLinearVecEnv:
    """:func:`make_vec` of a linear scenario: the env ``scenario.make_env`` builds
    (``scenario.linear_arguments``), with ``num_envs`` envs (no layer has a linear vector
    form yet)."""
    plan = scenario.plan(needs)
    if plan.layers:
        raise ValueError(
            f"the linear vector env takes no layers yet, and this stack has {list(plan.names)}; "
            "use scenario.make_env(needs) (the PettingZoo env)"
        )
    if device is not None:
        raise ValueError("the linear vector env runs on NumPy only (device=None)")
    split = "train" if scenario.instances == "fixed" else scenario.instances
    return FederatedLinearVecEnv(
        **scenario.linear_arguments(needs),
        split=split,
        num_envs=num_envs,
        validate=True if validate is None else validate,
    )


__all__ = ["make_vec"]
