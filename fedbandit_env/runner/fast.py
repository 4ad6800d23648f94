"""The fast path's driver: whole trials of a registered policy as compiled loops.

A policy family may register, beside its policy, a *per-trial runner*
(:data:`TrialRunner`, the registry's ``fast_entry_point``): a function that plays one
whole trial of the scenario, given the :class:`TrialSetup` every trial shares and the
trial's two seeds, and returns a :class:`TrialResult`. :func:`run_fast` is the one
driver of all of them: it derives the seeds exactly as the PettingZoo path does
(:func:`fedbandit_env.seeding.trial_seeds`), runs the trials on threads (results do
not depend on how many), shows progress, and assembles the
:class:`~fedbandit_env.runner.rollout.RegretCurves`.

The contract a runner keeps (``tests/runner/test_replay.py`` checks it for every registered
fast path): given the same seeds it produces the same arms, rewards and regret at every
step as the policy's team on ``scenario.make_env(...)`` through the PettingZoo API. So
it draws from the generators of :mod:`fedbandit_env.seeding` in the same order and
reproduces what crosses the API (observations and messages are float32).

The reference families' runners live in ``baselines/<family>/fast.py``.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fedbandit_env import registry
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.scenario.faults import FAULT_SWITCHES
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.scenario.trial import TrialResult, TrialRunner, TrialSetup, record_steps
from fedbandit_env.seeding import trial_seeds


def _cache_folders(folder: Path) -> list[Path]:
    """Where numba keeps the disk cache of the kernels in ``folder``: under
    ``NUMBA_CACHE_DIR`` when it is set (numba's ``UserProvidedCacheLocator``), else beside
    them."""
    from numba.core import config
    from numba.core.caching import UserProvidedCacheLocator

    cache_dir = getattr(config, "CACHE_DIR", "")  # set from NUMBA_CACHE_DIR
    if cache_dir:  # numba's first choice when set: it ignores __pycache__ then
        sub = UserProvidedCacheLocator.get_suitable_cache_subpath(str(folder / "x.py"))
        return [Path(cache_dir) / sub]
    return [folder / "__pycache__"]


NOTICE_AFTER_S = 2.0
"""How long the first trial of a family may take before the compile notice shows."""

_ANNOUNCED: set[Path] = set()
"""Family folders whose compile notice this process has printed (once each)."""


@functools.lru_cache(maxsize=1)
def _compiled_sources() -> list[Path]:
    """Every module of the package and of ``baselines`` that defines compiled kernels
    (a loop may inline any of them)."""
    roots = [Path(__file__).resolve().parents[1]]
    spec = importlib.util.find_spec("baselines")
    if spec is not None and spec.origin is not None:
        roots.append(Path(spec.origin).parent)
    return [
        path
        for root in roots
        for path in root.rglob("*.py")
        if "@njit" in path.read_text(encoding="utf-8")
    ]


def stale_caches(folder: Path, sources: list[Path], caches: list[Path]) -> list[Path]:
    """The numba cache files (``.nbi``/``.nbc`` in ``caches``) of the compiled modules in
    ``folder`` that are older than the newest of ``sources``.

    numba keys a function's disk cache by its own source file's time, but a compiled loop
    inlines the kernels it calls from *other* modules: after an edit of only those, numba
    would load the loop compiled against the old kernels (the fast path then silently
    disagrees with the PettingZoo path). Such caches are what this returns.

    Examples:
        >>> import os, tempfile
        >>> d = Path(tempfile.mkdtemp()); (d / "c").mkdir()
        >>> cache = d / "c" / "loop.f-1.py311.nbi"
        >>> _ = (d / "loop.py").write_text("@njit"); _ = cache.write_text("")
        >>> os.utime(cache, (0, 0))  # older than every source
        >>> [p.name for p in stale_caches(d, [d / "loop.py"], [d / "c"])]
        ['loop.f-1.py311.nbi']
    """
    if not sources:
        return []
    newest = max(p.stat().st_mtime for p in sources if p.exists())
    out = []
    for path in folder.glob("*.py"):
        if "@njit" not in path.read_text(encoding="utf-8"):
            continue
        for cache in caches:
            for suffix in ("nbi", "nbc"):
                out += [c for c in cache.glob(f"{path.stem}.*.{suffix}")
                        if c.stat().st_mtime < newest]  # fmt: skip
    return out


def purge_stale_caches(runner: Callable[..., Any]) -> int:
    """Remove :func:`stale_caches` of ``runner``'s family (numba then compiles it again,
    against the kernels as they are); returns how many files went.

    Examples:
        >>> purge_stale_caches(print)  # a builtin: nothing compiled
        0
    """
    source = getattr(sys.modules.get(getattr(runner, "__module__", "") or ""), "__file__", None)
    if source is None or not source.endswith(".py"):
        return 0
    folder = Path(source).parent
    gone = 0
    for path in stale_caches(folder, _compiled_sources(), _cache_folders(folder)):
        try:
            path.unlink()
            gone += 1
        except OSError:  # another process removed it, or a read-only install: numba copes
            pass
    return gone


def needs_compiling(runner: Callable[..., Any]) -> bool:
    """Whether a compiled module of ``runner``'s family (the ``.py`` files beside its
    module that use ``@njit``) has no numba cache newer than its source, i.e. the first
    trial will compile (numba keys its disk cache by the source file's time). Looks
    where numba does (beside the sources, or under ``NUMBA_CACHE_DIR``); ``False`` once
    the process has said it for this family (the notice comes once per command).

    Examples:
        >>> needs_compiling(print)  # a builtin: nothing to compile
        False
    """
    source = getattr(sys.modules.get(getattr(runner, "__module__", "") or ""), "__file__", None)
    if source is None or not source.endswith(".py"):
        return False
    folder = Path(source).parent
    if folder in _ANNOUNCED:
        return False
    caches = _cache_folders(folder)
    for path in folder.glob("*.py"):
        if "@njit" not in path.read_text(encoding="utf-8"):
            continue
        cache = [c for d in caches for c in d.glob(f"{path.stem}.*.nbi")]
        if not any(c.stat().st_mtime >= path.stat().st_mtime for c in cache):
            _ANNOUNCED.add(folder)
            return True
    return False


def unmodelled_faults(runner: Callable[..., Any], scenario: Scenario) -> list[str]:
    """The faults ``scenario`` switches on that ``runner`` does not model (a runner lists
    the ones it does in its ``faults`` attribute).

    Examples:
        >>> from fedbandit_env.scenario.scenario import Scenario
        >>> unmodelled_faults(print, Scenario(loss=0.1, delay=2))
        ['loss', 'delay']
    """
    modelled = getattr(runner, "faults", ())
    switched = [k for k in FAULT_SWITCHES if getattr(scenario, k) and k not in modelled]
    return switched[::-1]  # outermost first: the order the refusal names them


def has_fast_path(policy_id: str) -> bool:
    """Whether ``policy_id`` registered a per-trial runner.

    Examples:
        >>> has_fast_path("gossip_ucb"), has_fast_path("ppo:model.zip")
        (True, False)
    """
    if policy_id not in registry.policy_ids():  # a saved model, or unknown
        return False
    return registry.spec(policy_id).has_fast_path


def check_bandit(spec: registry.PolicySpec, scenario: Scenario) -> None:
    """Refuse a policy on the other kind of bandit than the one it declares
    (:attr:`~fedbandit_env.registry.PolicySpec.bandit`).

    Examples:
        >>> check_bandit(registry.spec("lin_ucb"), Scenario())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: lin_ucb plays linear contextual bandits (--instance dubey), ...
    """
    if spec.bandit == "linear" and not scenario.linear:
        raise ValueError(
            f"{spec.id} plays linear contextual bandits (--instance dubey), not the "
            f"multi-armed {scenario.instance!r}"
        )
    if spec.bandit == "mab" and scenario.linear:
        raise ValueError(
            f"{spec.id} is a multi-armed policy; the linear scenario {scenario.instance!r} "
            "runs policies registered with bandit='linear' or 'any' (fedbandit list)"
        )


def run_fast(
    policy_id: str | registry.PolicySpec,
    scenario: Scenario,
    n_trials: int,
    seed: int = 0,
    record_every: int = 1,
    label: str | None = None,
    progress: bool = True,
    workers: int = 1,
    trace: bool = False,
    first_trial: int = 0,
    **params: Any,
) -> RegretCurves:
    """Run ``n_trials`` of a registered policy on its fast path.

    Same seeds, same results as :func:`fedbandit_env.runner.run_trials` with the
    policy's team on ``scenario.make_env(...)``, step for step.

    Args:
        policy_id: A registered id with a fast path (:func:`has_fast_path`), or a
            :class:`~fedbandit_env.registry.PolicySpec` with a ``fast_entry_point``.
        scenario: The setting (problem, graph, protocol, horizon, privacy estimator).
        n_trials: Independent trials.
        seed: Seed of the experiment.
        record_every: Record regret every ``k`` steps (memory independent of ``T``).
        label: Name in results (default ``policy_id``).
        progress: Show a progress bar over trials.
        workers: Threads running trials concurrently (results do not depend on it).
        trace: Also keep every step's arms and observed rewards (``meta["arms"]``,
            ``meta["rewards"]``, shape ``(trials, T, N)``); for tests and debugging.
        first_trial: Run trials ``first_trial .. first_trial + n_trials - 1`` of
            ``seed`` (a sweep's single runs are the same trials as a bench's).
        **params: The policy's constructor options (``epsilon``, ``alpha_1``, ...).

    Raises:
        ValueError: For a policy without a fast path, or bad counts.

    Examples:
        >>> c = run_fast("local_ucb", Scenario(n_agents=3, n_arms=2, horizon=50), 2,
        ...              record_every=25, progress=False)
        >>> c.regret.shape
        (2, 3, 2)
    """
    if isinstance(policy_id, registry.PolicySpec):
        spec, policy_id = policy_id, policy_id.id
    elif has_fast_path(policy_id):
        spec = registry.spec(policy_id)
    else:
        spec = None
    if spec is None or not spec.has_fast_path:
        fast = [p for p in registry.policy_ids() if registry.spec(p).has_fast_path]
        raise ValueError(f"no fast path for {policy_id!r}; fast ids: {fast}")
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if first_trial < 0:
        raise ValueError(f"first_trial must be >= 0, got {first_trial}")
    check_bandit(spec, scenario)
    runner: TrialRunner = spec.fast_runner()
    missing = unmodelled_faults(runner, scenario)
    if missing:
        faults = ", ".join(f"{k}={getattr(scenario, k)}" for k in missing)
        raise ValueError(
            f"the fast path of {spec.id} does not model {faults}: run it on the PettingZoo "
            f"path (evaluate does)"
        )
    params = {**spec.kwargs, **params}  # the registered defaults, as spec.make applies them
    team = spec.make(**params)  # checks the options as the PettingZoo path would
    if team.noise_source() == "secure" or scenario.privacy_noise == "secure":
        raise ValueError(
            f"the fast path of {spec.id} replays the seeded noise streams; secure noise "
            "(OS entropy) is drawn on the PettingZoo path (evaluate takes it there)"
        )
    steps = record_steps(scenario.horizon, record_every)
    plan = scenario.plan(team.requirements(scenario.n_agents, scenario.n_arms))
    shared = TrialSetup.build(scenario, steps, trace, params, plan=plan)
    seeds = trial_seeds(seed, first_trial + n_trials)[first_trial:]
    fixed = scenario.instances == "fixed"

    def one(s: tuple[int, Any]) -> tuple[TrialResult, float]:
        start = time.perf_counter()
        setup = shared if fixed else TrialSetup.build(scenario, steps, trace, params, s[0], plan)
        res = runner(setup, s)
        return res, time.perf_counter() - start

    # Say so once, and only when the first trial is slow to come (it would otherwise look
    # like a hang): a warm cache the check cannot see never prints a notice.
    said: list[bool] = []

    def announce() -> None:
        said.append(True)
        print(
            f"fedbandit: compiling the fast path of {policy_id} (first run after installing "
            "or editing it; cached afterwards)...",
            file=sys.stderr,
            flush=True,
        )

    notice = threading.Timer(NOTICE_AFTER_S, announce)
    notice.daemon = True
    purge_stale_caches(runner)  # a loop compiled against kernels edited since
    compiling = needs_compiling(runner)
    if compiling:
        notice.start()
    bar = tqdm(
        total=n_trials, desc=label or policy_id, unit="trial", disable=not progress, leave=False
    )
    results: list[tuple[TrialResult, float]] = []
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for res in pool.map(one, seeds):
            if compiling and not results:
                notice.cancel()
                notice.join()
                if said:
                    took = time.perf_counter() - start
                    print(f"fedbandit: compiled in {took:.0f} s", file=sys.stderr, flush=True)
            results.append(res)
            bar.update()
    bar.close()
    n_records = steps.size
    curves = RegretCurves(
        label or policy_id,
        steps,
        np.stack([r.regret for r, _ in results]),
        np.array([sec for _, sec in results]),
        comm_cost=np.stack(
            [r.comm_cost if r.comm_cost is not None else np.zeros(n_records) for r, _ in results]
        ),
        seeds=np.arange(first_trial, first_trial + n_trials),
        privacy_spent=team.privacy_spent(
            steps, scenario.horizon, scenario.n_agents, scenario.n_arms
        ),
        privacy_delta=team.privacy_delta(scenario.n_agents, scenario.n_arms),
    )
    curves.meta["path"] = "fast"
    if trace:
        curves.meta["arms"] = np.stack([r.arms for r, _ in results])
        curves.meta["rewards"] = np.stack([r.rewards for r, _ in results])
    return curves


__all__ = [
    "check_bandit",
    "has_fast_path",
    "run_fast",
]
