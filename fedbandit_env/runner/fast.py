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
import hashlib
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


STAMP = "fedbandit-kernels.stamp"
"""The file, in a family's numba cache folder, that holds :func:`kernels_fingerprint` of
the kernels its caches were compiled against."""


def kernels_fingerprint(sources: list[Path]) -> str:
    """A digest of every compiled source's path, modification time and size: what numba
    compares (equality, not order) to decide that a cached function is out of date.

    Examples:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp()); _ = (d / "k.py").write_text("@njit")
        >>> a = kernels_fingerprint([d / "k.py"]); _ = (d / "k.py").write_text("@njit  # edited")
        >>> a == kernels_fingerprint([d / "k.py"]), len(a)
        (False, 64)
    """
    digest = hashlib.sha256()
    for path in sorted(sources):
        if path.exists():
            st = path.stat()
            digest.update(f"{path}|{st.st_mtime_ns}|{st.st_size}\n".encode())
    return digest.hexdigest()


def stale_caches(
    folder: Path, sources: list[Path], caches: list[Path], fingerprint: str | None = None
) -> list[Path]:
    """The numba cache files (``.nbi``/``.nbc`` in ``caches``) of the compiled modules in
    ``folder`` when the kernels changed since they were written: a cache folder whose
    :data:`STAMP` is missing or differs from :func:`kernels_fingerprint` of ``sources``.

    numba keys a function's disk cache by its own source file's time and size, but a
    compiled loop inlines the kernels it calls from *other* modules: after an edit of only
    those, numba would load the loop compiled against the old kernels (the fast path then
    silently disagrees with the PettingZoo path). Such caches are what this returns. The
    rule compares fingerprints, as numba compares stamps, not times: a source dated in the
    future (a clock skew, an unpacked archive) once made every run purge and compile again.

    Examples:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp()); (d / "c").mkdir()
        >>> _ = (d / "loop.py").write_text("@njit")
        >>> _ = (d / "c" / "loop.f-1.py311.nbi").write_text("")
        >>> [p.name for p in stale_caches(d, [d / "loop.py"], [d / "c"])]  # no stamp yet
        ['loop.f-1.py311.nbi']
        >>> write_stamps([d / "c"], kernels_fingerprint([d / "loop.py"]))
        >>> stale_caches(d, [d / "loop.py"], [d / "c"])
        []
    """
    if not sources:
        return []
    fingerprint = fingerprint or kernels_fingerprint(sources)
    out = []
    for cache in caches:
        stamp = cache / STAMP
        if stamp.exists() and stamp.read_text(encoding="utf-8").strip() == fingerprint:
            continue
        for path in folder.glob("*.py"):
            if "@njit" not in path.read_text(encoding="utf-8"):
                continue
            for suffix in ("nbi", "nbc"):
                out += sorted(cache.glob(f"{path.stem}.*.{suffix}"))
    return out


def write_stamps(caches: list[Path], fingerprint: str) -> None:
    """Record in each cache folder the kernels its caches are compiled against from now
    on (:data:`STAMP`, :func:`kernels_fingerprint`); a folder that cannot be written (a
    read-only install) is left."""
    for cache in caches:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            (cache / STAMP).write_text(fingerprint + "\n", encoding="utf-8")
        except OSError:
            pass


def purge_stale_caches(runner: Callable[..., Any]) -> int:
    """Remove :func:`stale_caches` of ``runner``'s family (numba then compiles it again,
    against the kernels as they are) and stamp its cache folders; returns how many files
    went. The family is the runner's module, or the modules it names in
    ``compiled_modules`` (a :class:`~fedbandit_env.runner.vector_trials.CompiledTrials`:
    the core's rollout and the policy's kernels).

    Examples:
        >>> purge_stale_caches(print)  # a builtin: nothing compiled
        0
    """
    modules = getattr(runner, "compiled_modules", None) or [getattr(runner, "__module__", "")]
    gone, sources, fingerprint = 0, _compiled_sources(), ""
    for module in modules:
        source = getattr(sys.modules.get(module or ""), "__file__", None)
        if source is None or not source.endswith(".py"):
            continue
        folder = Path(source).parent
        caches = _cache_folders(folder)
        fingerprint = fingerprint or kernels_fingerprint(sources)
        stale = stale_caches(folder, sources, caches, fingerprint)
        for path in stale:
            try:
                path.unlink()
                gone += 1
            except OSError:  # another process removed it, or a read-only install
                pass
        if stale or any(not (c / STAMP).exists() for c in caches):
            write_stamps(caches, fingerprint)
    return gone


class CompileNotice:
    """Says on stderr that the fast path of a policy is compiling, when numba compiles
    (a cache miss: its ``numba:compile`` event) and the first trial has not come
    :data:`NOTICE_AFTER_S` seconds later; then how long it took. A warm cache compiles
    nothing, so it says nothing, however long the first trial runs.

    Numba compiles only what a run calls, so a family's module that this run does not use
    (Gossip_UCB's faulty-network loop in a run without faults) has no cache file; an
    earlier check that read the cache folder took that for "will compile" and printed the
    notice on every run whose first trial was slow, though nothing compiled.

    Examples:
        >>> with CompileNotice("my_policy") as notice:
        ...     notice.first_result()  # nothing compiled: nothing said
        >>> notice.compiled
        False
    """

    def __init__(self, policy_id: str) -> None:
        self.policy_id = policy_id
        self.compiled = False
        """Whether numba compiled anything while the notice was installed."""
        self._said = False
        self._done = False
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._start = time.perf_counter()
        self._listener: Any = None

    def _announce(self) -> None:
        self._said = True
        print(
            f"fedbandit: compiling the fast path of {self.policy_id} (first run after "
            "installing or editing it; cached afterwards)...",
            file=sys.stderr,
            flush=True,
        )

    def _on_compile(self) -> None:
        with self._lock:
            self.compiled = True
            if self._timer is None and not self._done:
                left = max(0.0, NOTICE_AFTER_S - (time.perf_counter() - self._start))
                self._timer = threading.Timer(left, self._announce)
                self._timer.daemon = True
                self._timer.start()

    def first_result(self) -> None:
        """The first trial is in: cancel a pending notice, or say how long compiling took."""
        with self._lock:
            timer, self._timer, self._done = self._timer, None, True
        if timer is not None:
            timer.cancel()
            timer.join()
        if self._said:
            took = time.perf_counter() - self._start
            print(f"fedbandit: compiled in {took:.0f} s", file=sys.stderr, flush=True)
            self._said = False

    def __enter__(self) -> CompileNotice:
        from numba.core import event

        notice = self

        class _Listener(event.Listener):
            def on_start(self, ev: Any) -> None:
                notice._on_compile()

            def on_end(self, ev: Any) -> None:
                pass

        self._listener = _Listener()
        self._start = time.perf_counter()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc: object) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()


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


BATCH = 256
"""Trials a batched runner plays at once at most (its envs' state and trace in memory)."""


def _chunks(seeds: list[tuple[int, Any]], workers: int) -> list[list[tuple[int, Any]]]:
    """The trials split into at least ``workers`` batches of at most :data:`BATCH`, in
    order (a batched runner's trials do not depend on the split).

    Examples:
        >>> [len(c) for c in _chunks(list(range(5)), 2)]
        [3, 2]
    """
    size = min(BATCH, -(-len(seeds) // workers))
    return [seeds[k : k + size] for k in range(0, len(seeds), size)]


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

    purge_stale_caches(runner)  # a loop compiled against kernels edited since
    bar = tqdm(
        total=n_trials, desc=label or policy_id, unit="trial", disable=not progress, leave=False
    )
    results: list[tuple[TrialResult, float]] = []
    batched = getattr(runner, "run_batch", None)
    # Say so only when numba compiles and the first trial is slow to come (it would
    # otherwise look like a hang): a warm cache compiles nothing and says nothing.
    with CompileNotice(policy_id) as notice, ThreadPoolExecutor(max_workers=workers) as pool:
        if batched is not None:  # a batch of envs a thread (CompiledTrials)
            stop = threading.Event()  # Ctrl-C: the batches in flight end at their next block

            def batch(chunk: list[tuple[int, Any]]) -> list[tuple[TrialResult, float]]:
                start = time.perf_counter()
                done = batched(shared, chunk, stop=stop.is_set)
                each = (time.perf_counter() - start) / len(chunk)
                return [(res, each) for res in done]

            try:
                for done in pool.map(batch, _chunks(seeds, workers)):
                    if not results:
                        notice.first_result()
                    results.extend(done)
                    bar.update(len(done))
            except BaseException:
                stop.set()
                raise
        else:
            for res in pool.map(one, seeds):
                if not results:
                    notice.first_result()
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
