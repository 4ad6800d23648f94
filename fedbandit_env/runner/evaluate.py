"""Evaluate one policy on one scenario: the fast path where it exists, else PettingZoo.

Both ``fedbandit bench`` and the sweep call :func:`evaluate`, so a run of a sweep is
exactly the same trial as in ``fedbandit bench`` with the same options. Policies are
found through the registry (:mod:`fedbandit_env.registry`), saved models by their
``"ppo:path.zip"`` spec.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from fedbandit_env import registry
from fedbandit_env.policies import privacy_curve
from fedbandit_env.runner.conditions import UntrainedConditionsWarning, untuned_conditions
from fedbandit_env.runner.rollout import RegretCurves, run_trials
from fedbandit_env.runner.vector_trials import run_vector_trials, vector_unsupported
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.seeding import spawn
from fedbandit_env.settings import get_setting

TUNED_PREFIX = "tuned:"
"""A policy ``"tuned:path.json"`` is the result ``fedbandit tune`` saved there."""


def is_model(policy: str) -> bool:
    """Whether ``policy`` names a saved model (``"ppo:path.zip"``) rather than an id.

    Examples:
        >>> is_model("ppo:runs/a.zip"), is_model("gossip_ucb")
        (True, False)
    """
    return ":" in policy


def evaluate(
    policy: str | registry.PolicySpec | Callable[..., Any],
    scenario: Scenario,
    options: Mapping[str, Any] | None = None,
    *,
    trials: int = 1,
    seed: int = 0,
    first_trial: int = 0,
    record_every: int = 1,
    interactive: bool = False,
    workers: int = 1,
    progress: bool = False,
    label: str | None = None,
) -> RegretCurves:
    """Run trials ``first_trial ..`` of ``policy`` on ``scenario`` and return its curves.

    Args:
        policy: A registered policy id (:func:`fedbandit_env.registry.policy_ids`), a
            saved model ``"ppo:path.zip"`` (``a2c:``, ``dqn:``; evaluated through the
            wrapper stack saved beside it), a tuned policy ``"tuned:path.json"``
            (:mod:`~fedbandit_env.runner.tune`), a :class:`~fedbandit_env.registry.PolicySpec`,
            or any factory of a ``Team`` or a per-agent ``Policy`` (a class, a function;
            called with ``options``), registered or not.
        scenario: The setting.
        options: Constructor options of the policy (``epsilon``, ``participation``, ...);
            for a saved model only ``deterministic`` (default ``False``: arms drawn from
            the policy's distribution with the trial's seed; ``True``: its most likely
            arm, labelled ``<model>:greedy``).
        trials: Number of trials.
        seed: Seed of the experiment (trial ``j`` is its ``j``-th child).
        first_trial: Index of the first trial.
        record_every: Record every ``k`` steps.
        interactive: Force the PettingZoo path even where a fast path exists (both give
            the same results); for a saved model, even where the batched loop
            (:mod:`fedbandit_env.rl.batched`) models its stack; for a vector policy,
            even where the vector env does.
        workers: Threads of the fast path (results do not depend on it).
        progress: Show a progress bar.
        label: Name in results (default: ``policy``).

    Returns:
        The curves, with ``privacy_spent`` and ``meta["path"]`` (``"fast"``,
        ``"batched"`` for a saved model's trials advanced together, ``"vector"`` for a
        :class:`~fedbandit_env.vector.policy.VectorPolicy`'s trials on the vector env, or
        ``"interactive"``) filled in.

    Examples:
        >>> c = evaluate("local_ucb", Scenario(n_agents=3, n_arms=2, horizon=40),
        ...              trials=2, first_trial=1, record_every=20)
        >>> c.seeds.tolist(), c.regret.shape, c.meta["path"]
        ([1, 2], (2, 3, 2), 'fast')
    """
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if isinstance(policy, str) and policy.startswith(TUNED_PREFIX):
        from fedbandit_env.runner.tune import tuned_policy

        if options:
            raise ValueError(f"a tuned policy takes no options, got {sorted(options)}")
        policy, tuned_label = tuned_policy(policy[len(TUNED_PREFIX) :], scenario)
        label = label or tuned_label
    spec = as_spec(policy, label)
    if spec is None:  # a saved model
        assert isinstance(policy, str)
        opts = dict(options or {})
        deterministic = bool(opts.pop("deterministic", False))
        if opts:
            raise ValueError(
                f"a saved model takes only the option 'deterministic', got {sorted(opts)}"
            )
        return _evaluate_model(
            policy,
            scenario,
            trials,
            seed,
            first_trial,
            record_every,
            progress,
            label,
            deterministic,
            interactive,
        )
    from fedbandit_env.runner.fast import check_bandit, run_fast, unmodelled_faults

    check_bandit(spec, scenario)
    policy = spec.id
    kwargs = dict(options or {})
    if "noise" in kwargs:
        kwargs, scenario = noise_option(spec, kwargs, scenario)
    team = spec.make(**kwargs)
    tuned_on = getattr(getattr(team, "policy", team), "tuned_on", None)
    if isinstance(tuned_on, Mapping) and (differ := untuned_conditions(tuned_on, scenario)):
        warnings.warn(
            f"{spec.id} runs on {', '.join(differ)}: it was tuned (or trained) for other "
            "conditions, so its results say how it transfers",
            UntrainedConditionsWarning,
            stacklevel=2,
        )
    team, kwargs, scenario = one_noise(spec, team, kwargs, scenario)
    n, m = scenario.n_agents, scenario.n_arms
    needs = merged = team.requirements(n, m)
    fast_scenario = scenario
    setting = scenario.setting
    if setting is not None and spec.privileged:  # a bound: it runs outside the setting
        scenario = fast_scenario = replace(scenario, setting=None, epsilon=None)
    if scenario.setting is not None:
        if not spec.runs_in(scenario.setting):
            raise ValueError(
                f"{policy} is not meant for the {scenario.setting!r} setting; it runs in "
                f"{list(spec.settings or ())}"
            )
        merged = get_setting(scenario.setting).requirements(needs, scenario.epsilon)
        # the same env without the setting, for the fast path (which knows no settings)
        protocol = merged.protocol or scenario.protocol
        fast_scenario = replace(scenario, setting=None, epsilon=None, protocol=protocol)
    # the fast path plays the policy's own env: usable unless the setting adds privacy
    fast_ok = merged.epsilon == needs.epsilon and spec.has_fast_path and not interactive
    # the compiled loops replay the seeded streams; secure noise is drawn on the PettingZoo
    # path (one_noise made the policy's own noise and the scenario's one setting)
    fast_ok = fast_ok and scenario.privacy_noise == "seeded"
    if fast_ok and scenario.faults:  # only where the compiled loop models them
        fast_ok = not unmodelled_faults(spec.fast_runner(), scenario)
    from fedbandit_env.vector.policy import VectorTeam

    # a compiled trial loop where the family has one and it models the scenario; else a
    # vector policy plays on the vector env where it models the stack, else (the same
    # trials, slower) through its VectorTeam on the PettingZoo env
    vector = isinstance(team, VectorTeam) and not interactive and not fast_ok
    if vector and vector_unsupported(scenario, needs) is None:
        assert isinstance(team, VectorTeam)
        from fedbandit_env.backend import blas_threads

        with blas_threads(1):  # small matrices, many times: one thread each
            curves = run_vector_trials(
                team.policy, scenario, needs, trials, seed=seed, first_trial=first_trial,
                record_every=record_every, progress=progress, label=label or policy,
            )  # fmt: skip
        curves.privacy_spent = team.privacy_spent(curves.t, scenario.horizon, n, m)
        curves.privacy_delta = team.privacy_delta(n, m)
        curves.meta["path"] = "vector"
    elif fast_ok:
        curves = run_fast(
            spec,
            fast_scenario,
            trials,
            seed=seed,
            record_every=record_every,
            progress=progress,
            workers=workers,
            first_trial=first_trial,
            label=label,
            **kwargs,
        )
    else:
        curves = run_trials(
            functools.partial(scenario.make_env, needs),
            functools.partial(spec.make, **kwargs),
            n_trials=trials,
            seed=seed,
            record_every=record_every,
            label=label or policy,
            progress=progress,
            first_trial=first_trial,
        )
        curves.meta["path"] = "interactive"
    if scenario.setting is not None:  # what the setting's stack spends, whoever acts
        curves.privacy_spent = privacy_curve(
            merged, curves.t, scenario.horizon, team.own_privacy(n, m)
        )
        curves.privacy_delta = team.privacy_delta(n, m)  # the setting's tree is pure
        curves.setting = scenario.setting
    if setting is not None and spec.privileged:
        curves.setting = setting
        curves.meta["privileged"] = 1
    return curves


def noise_option(
    spec: registry.PolicySpec, options: dict[str, Any], scenario: Any
) -> tuple[dict[str, Any], Any]:
    """Honour a ``noise`` option for a policy with no mechanism of its own: its noise is
    the setting's ``PrivateRewards``, so ``noise="secure"`` makes the scenario's
    ``privacy_noise`` secure (and ``"seeded"`` keeps it seeded); a policy that reads no
    private rewards here has no noise the option could set, which is refused in one line.
    A policy with a mechanism of its own keeps the option (:func:`one_noise` then makes
    the two one setting).

    Raises:
        ValueError: For a value other than ``"seeded"`` / ``"secure"``, for ``noise``
            given to a policy with no noise anywhere in the run, or ``"seeded"`` asked
            for in a secure scenario.

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=5, setting="neighbours+private",
        ...              epsilon=1.0)
        >>> opts, s2 = noise_option(registry.spec("tuned_private_ts"), {"noise": "secure"}, s)
        >>> opts, s2.privacy_noise
        ({}, 'secure')
    """
    value = options["noise"]
    if value not in ("seeded", "secure"):
        raise ValueError(f"noise must be 'seeded' or 'secure', got {value!r}")
    rest = {k: v for k, v in options.items() if k != "noise"}
    probe = spec.make(**rest)
    if probe.noise_source() is not None:  # a mechanism of its own: the option is its
        return options, scenario
    n, m = scenario.n_agents, scenario.n_arms
    setting = scenario.setting or ""
    if probe.requirements(n, m).epsilon is None and not setting.endswith("+private"):
        raise ValueError(
            f"{spec.id} has no noise of its own and reads no private rewards here, so "
            f"noise={value!r} sets nothing; run it in a '+private' setting"
        )
    if value == "seeded" and scenario.privacy_noise == "secure":
        raise ValueError(
            f"{spec.id}: noise='seeded' asked for while the scenario asks for "
            "privacy_noise='secure'; they are one setting: drop the option or set both"
        )
    return rest, replace(scenario, privacy_noise=value)


def one_noise(
    spec: registry.PolicySpec, team: Any, options: dict[str, Any], scenario: Scenario
) -> tuple[Any, dict[str, Any], Scenario]:
    """Make a policy's own ``noise`` option and the scenario's ``privacy_noise`` one
    setting: whoever asks for ``"secure"`` noise gets it everywhere, the policy's own
    mechanism (rebuilt with ``noise="secure"``) and the setting's ``PrivateRewards``
    alike, and with it the PettingZoo path (the compiled loops replay seeded streams).

    Returns:
        ``(team, options, scenario)``, rebuilt where one of them asked for secure noise.

    Raises:
        ValueError: If the options ask for ``noise="seeded"`` explicitly while the
            scenario asks for ``"secure"``: no run gives the one asked for and the other.

    Examples:
        >>> s = Scenario(n_agents=3, n_arms=2, horizon=10)
        >>> team, opts, s2 = one_noise(registry.spec("cdp_mab"),
        ...     registry.make("cdp_mab", noise="secure"), {"noise": "secure"}, s)
        >>> s2.privacy_noise, team.noise_source()
        ('secure', 'secure')
        >>> team, opts, s3 = one_noise(registry.spec("cdp_mab"), registry.make("cdp_mab"), {},
        ...     replace(s, privacy_noise="secure"))
        >>> opts, team.noise_source()
        ({'noise': 'secure'}, 'secure')
    """
    own = team.noise_source()
    if own == "secure" and scenario.privacy_noise != "secure":
        return team, options, replace(scenario, privacy_noise="secure")
    if own == "seeded" and scenario.privacy_noise == "secure":
        if "noise" in options:  # asked for seeded noise, explicitly
            raise ValueError(
                f"{spec.id}: noise={options['noise']!r} asked for while the scenario asks for "
                "privacy_noise='secure'; they are one setting: drop the option or set both"
            )
        options = {**options, "noise": "secure"}
        return spec.make(**options), options, scenario
    return team, options, scenario


def as_spec(
    policy: str | registry.PolicySpec | Callable[..., Any], label: str | None = None
) -> registry.PolicySpec | None:
    """The spec of what :func:`evaluate` is given (``None`` for a saved model).

    A factory becomes an unregistered spec named ``label``, or its ``__name__`` where
    that is a valid id, or ``"custom"``.

    Examples:
        >>> from fedbandit_env.policies import FixedArm
        >>> as_spec(FixedArm).id, as_spec("gossip_ucb").family, as_spec("ppo:m.zip")
        ('FixedArm', 'gossip', None)
    """
    if isinstance(policy, registry.PolicySpec):
        return policy
    if isinstance(policy, str):
        return None if is_model(policy) else registry.spec(policy)
    if not callable(policy):
        raise TypeError(
            f"policy must be an id, a saved model, a PolicySpec or a factory, got {policy!r}"
        )
    for name in (label, getattr(policy, "__name__", None), "custom"):
        if name is None:
            continue
        try:
            return registry.PolicySpec(str(name), policy)
        except ValueError:
            continue
    raise AssertionError("unreachable")  # pragma: no cover


def _evaluate_model(
    spec: str,
    scenario: Scenario,
    trials: int,
    seed: int,
    first_trial: int,
    record_every: int,
    progress: bool,
    label: str | None,
    deterministic: bool = False,
    interactive: bool = False,
) -> RegretCurves:
    """A saved stable-baselines3 model on ``scenario``, through the wrapper stack saved
    beside it, with the same seeds as every other policy: all trials advanced together
    with one forward pass a step (:mod:`fedbandit_env.rl.batched`) where the stack
    allows, else one PettingZoo rollout per trial (the same trials either way)."""
    from fedbandit_env.rl import ModelTeam, load_model
    from fedbandit_env.rl.common import set_torch_threads
    from fedbandit_env.wrappers.flatten import flat_box

    set_torch_threads(1)  # a small network on few cores: more threads only oversubscribe
    name, model, stack = load_model(spec)
    label = label or (f"{name}:greedy" if deterministic else name)
    untrained = stack.untrained_conditions(scenario)
    if untrained:
        warnings.warn(
            f"{spec} runs on {' and '.join(untrained)}: it was not trained for this, and its "
            "results say how it transfers, not how well it learned",
            UntrainedConditionsWarning,
            stacklevel=3,
        )
    probe = stack.make_env(scenario)
    expected = flat_box(probe.observation_space(probe.possible_agents[0]))
    if model.observation_space.shape != expected.shape:
        raise ValueError(
            f"{spec}: the model observes {model.observation_space.shape} but this scenario "
            f"under {stack} gives {expected.shape}; evaluate it on the setting it was "
            "trained for (agents, arms, protocol)"
        )
    from fedbandit_env.rl.batched import batched_trials, unsupported

    if not interactive and unsupported(probe) is None:
        children = spawn(seed, first_trial + trials)[first_trial:]
        t, regret, cost, seconds = batched_trials(
            model, stack, scenario, children, record_every, deterministic, progress=progress,
            label=label,
        )  # fmt: skip
        curves = RegretCurves(
            label, t, regret, seconds, comm_cost=cost,
            seeds=np.arange(first_trial, first_trial + trials),
        )  # fmt: skip
        curves.meta["path"] = "batched"
    else:
        message_fn = stack.message_fn if stack.share_means else None
        curves = run_trials(
            functools.partial(stack.make_env, scenario),
            lambda: ModelTeam(
                model,
                name=label,
                deterministic=deterministic,
                message_fn=message_fn,
                scale=stack.scale,
            ),
            n_trials=trials,
            seed=seed,
            record_every=record_every,
            label=label,
            progress=progress,
            first_trial=first_trial,
        )
        curves.meta["path"] = "interactive"
    probe.close()
    curves.meta["reward"] = stack.reward  # what it was trained on
    curves.meta["actions"] = "greedy" if deterministic else "sampled"
    if stack.privileged:
        curves.meta["privileged"] = 1
    needs = stack.requirements(scenario.n_arms)
    if scenario.setting is not None:
        needs = get_setting(scenario.setting).requirements(needs, scenario.epsilon)
        curves.setting = scenario.setting
    curves.privacy_spent = privacy_curve(needs, curves.t, scenario.horizon)
    curves.privacy_delta = 0.0  # a model has no mechanism of its own; the tree is pure
    curves.meta["stack"] = repr(stack)
    return curves
