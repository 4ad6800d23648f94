"""Sweeps: a grid of (scenario, policy, seed) runs, in parallel, resumable.

A :class:`Run` is one trial of one policy on one scenario. It is exactly trial
``trial`` of ``fedbandit bench`` with the same options (both call
:func:`~fedbandit_env.runner.evaluate.evaluate`), so its result depends on nothing but
its own description: not on the worker it ran on, the order, or the engine. That is
what makes a sweep resumable and a cluster run identical to a local one.

Storage under the output folder::

    runs/<key>.npz      one finished run (written atomically by the parent process as
                        soon as it arrives: an interruption loses only runs in flight)
    sweep.json          the full configuration, every run's key, and the summary
    results.csv         the tidy table (one row per scenario, policy, seed, agent, step)
    results.parquet     the same, where pyarrow is installed

``<key>`` hashes everything the run's result depends on (scenario, policy, its options,
seed, trial, recording interval), so resuming after changing the grid reuses exactly
the runs that did not change.

Engines: joblib's ``loky`` processes locally (``jobs``), or a Dask cluster behind
joblib (``cluster="local:4"`` starts a ``LocalCluster`` of 4 single-threaded workers,
``cluster="tcp://host:8786"`` connects to a running scheduler; its workers need
``fedbandit_env`` installed).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fedbandit_env import registry
from fedbandit_env.extras import require
from fedbandit_env.runner.compare import policy_label, policy_name
from fedbandit_env.runner.evaluate import evaluate, is_model
from fedbandit_env.runner.rollout import RegretCurves
from fedbandit_env.scenario.scenario import Scenario


@dataclass(frozen=True)
class Run:
    """One trial of one policy on one scenario: the unit of a sweep.

    Attributes:
        label: The scenario's label in the tidy table (its grid point).
        scenario: The setting.
        policy: Policy id, saved model (``"ppo:path.zip"``), or from Python a
            :class:`~fedbandit_env.registry.PolicySpec` or a factory (a user's policy
            class or function; the key hashes its import path, so keep it importable,
            at module level, for worker processes and for resuming).
        options: The policy's constructor options.
        seed: Seed of the experiment (also the scenario's own seed in ``fedbandit``).
        trial: Trial index: this run is trial ``trial`` of ``seed``.
        record_every: Record regret every ``k`` steps.
        imports: Modules to import before the policy is looked up (those that register
            a user's policy: ``fedbandit sweep --import``); not part of the key.

    Examples:
        >>> run = Run("base", Scenario(n_agents=2, n_arms=2, horizon=10), "random")
        >>> len(run.key), run.key == Run("base", Scenario(n_agents=2, n_arms=2,
        ...     horizon=10), "random", trial=0).key
        (16, True)
    """

    label: str
    scenario: Scenario
    policy: str | registry.PolicySpec | Callable[..., Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    trial: int = 0
    record_every: int = 1
    imports: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """A hash of everything the result depends on (not the label); for a saved
        model, also of the model file's bytes, so retraining it invalidates its runs."""
        spec = {
            "scenario": self.scenario.to_dict(),
            "policy": policy_name(self.policy),
            "model": _model_digest(self.policy),
            "options": dict(self.options),
            "seed": self.seed,
            "trial": self.trial,
            "record_every": self.record_every,
        }
        text = json.dumps(spec, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        """The run as a JSON-able dict (for ``sweep.json``)."""
        return {
            "key": self.key,
            "scenario": self.label,
            "policy": policy_name(self.policy),
            "seed": self.trial,
        }


def _model_digest(policy: object) -> str:
    if isinstance(policy, str) and is_model(policy):
        return _file_digest(policy.partition(":")[2])
    return ""


def _file_digest(path: str) -> str:
    """SHA-256 of a file's bytes (``""`` if it does not exist: loading will say so)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def execute(run: Run) -> RegretCurves:
    """Run one :class:`Run` (in whichever process the engine chose).

    Examples:
        >>> c = execute(Run("base", Scenario(n_agents=2, n_arms=2, horizon=10), "random"))
        >>> c.regret.shape, c.seeds.tolist()
        ((1, 2, 10), [0])
    """
    for module in run.imports:  # a worker process registers the user's policies too
        registry.import_plugin(module)
    return evaluate(
        run.policy,
        run.scenario,
        run.options,
        trials=1,
        seed=run.seed,
        first_trial=run.trial,
        record_every=run.record_every,
        workers=1,
        progress=False,
    )


def save_run(curves: RegretCurves, path: Path) -> None:
    """Store one finished run atomically (a crash never leaves half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with tmp.open("wb") as fh:
        np.savez(
            fh,
            t=curves.t,
            regret=curves.regret,
            comm_cost=curves.comm_cost,
            privacy_spent=curves.privacy_spent,
            privacy_delta=np.array(curves.privacy_delta),
            seconds=curves.seconds,
            path=np.array(str(curves.meta.get("path", ""))),
            privileged=np.array(int(bool(curves.meta.get("privileged")))),
        )
    os.replace(tmp, path)


def load_run(run: Run, path: Path) -> RegretCurves:
    """Read back what :func:`save_run` stored, labelled as ``run``."""
    with np.load(path) as data:
        curves = RegretCurves(
            policy_label(run.policy),
            data["t"],
            data["regret"],
            data["seconds"],
            comm_cost=data["comm_cost"],
            privacy_spent=data["privacy_spent"],
            # runs stored before delta was recorded: unknown
            privacy_delta=float(data["privacy_delta"]) if "privacy_delta" in data else np.nan,
            seeds=np.array([run.trial]),
            scenario=run.label,
            setting=run.scenario.setting or "",
        )
        curves.meta["path"] = str(data["path"])
        if "privileged" in data and int(data["privileged"]):  # runs stored before: unmarked
            curves.meta["privileged"] = 1
    return curves


class DamagedRunWarning(UserWarning):
    """A stored run file could not be read; it was set aside and will be recomputed."""


def stored_runs(store: Path, keys: Iterable[str]) -> set[str]:
    """The keys whose run file in ``store`` is complete and readable. A file that is not
    (truncated, empty, garbage: a disk fault, a copy cut short) is renamed
    ``<key>.npz.damaged`` with a :class:`DamagedRunWarning` naming it, so the run is
    recomputed and the evidence kept.

    Examples:
        >>> import tempfile, warnings
        >>> store = Path(tempfile.mkdtemp())
        >>> _ = (store / "k.npz").write_bytes(b"garbage")
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     stored_runs(store, ["k"])
        set()
        >>> sorted(p.name for p in store.iterdir()), "k.npz" in str(caught[0].message)
        (['k.npz.damaged'], True)
    """
    done = set()
    for key in keys:
        path = store / f"{key}.npz"
        if not path.exists():
            continue
        try:
            with np.load(path) as data:
                for name in RUN_FIELDS:
                    data[name]
        except Exception as err:
            aside = path.with_name(path.name + ".damaged")
            os.replace(path, aside)
            warnings.warn(
                f"run file {path} is damaged ({type(err).__name__}: {err}); set aside as "
                f"{aside.name}, the run will be recomputed",
                DamagedRunWarning,
                stacklevel=2,
            )
            continue
        done.add(key)
    return done


RUN_FIELDS = ("t", "regret", "comm_cost", "privacy_spent", "seconds", "path")
"""The arrays every stored run holds (:func:`save_run`)."""


def parse_cluster(cluster: str) -> tuple[str, int | None]:
    """``"local"``, ``"local:4"`` or a scheduler address, as ``(kind, workers)``.

    Examples:
        >>> parse_cluster("local:3"), parse_cluster("tcp://10.0.0.1:8786")
        (('local', 3), ('tcp://10.0.0.1:8786', None))
    """
    if cluster == "local" or cluster.startswith("local:"):
        _, _, count = cluster.partition(":")
        try:
            workers = int(count) if count else None
        except ValueError as err:
            raise ValueError(
                f"cluster must be local, local:N or an address, got {cluster!r}"
            ) from err
        if workers is not None and workers < 1:
            raise ValueError(f"a local cluster needs >= 1 worker, got {cluster!r}")
        return "local", workers
    if "://" not in cluster:
        raise ValueError(
            f"cluster must be 'local', 'local:N' or a scheduler address such as "
            f"tcp://host:8786, got {cluster!r}"
        )
    return cluster, None


@contextlib.contextmanager
def engine(jobs: int = 1, cluster: str | None = None) -> Iterator[tuple[str, int]]:
    """The joblib backend and ``n_jobs`` to run a sweep with (a context manager that
    starts, and afterwards closes, a Dask client when ``cluster`` is given).

    Examples:
        >>> with engine(jobs=1) as (backend, n_jobs):
        ...     backend, n_jobs
        ('sequential', 1)
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if cluster is None:
        yield ("sequential", 1) if jobs == 1 else ("loky", jobs)
        return
    kind, workers = parse_cluster(cluster)
    distributed = require("dask.distributed", "cluster", "a cluster")
    Client, LocalCluster = distributed.Client, distributed.LocalCluster
    if kind == "local":
        n = workers or jobs
        with (
            LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
            ) as local,
            Client(local) as client,
        ):
            client.wait_for_workers(n)
            yield "dask", n
    else:
        with Client(kind) as client:
            yield "dask", max(1, len(client.scheduler_info().get("workers", {})))


def run_sweep(
    runs: Sequence[Run],
    out: str | Path,
    *,
    jobs: int = 1,
    cluster: str | None = None,
    progress: bool = True,
    run_fn: Callable[[Run], RegretCurves] | None = None,
) -> list[RegretCurves]:
    """Run every run not already stored under ``out/runs``; return all of them, merged
    into one :class:`RegretCurves` per (scenario, policy), seeds in order.

    Runs with the same key (e.g. ``local_ucb`` in two scenarios that differ only in
    ``epsilon``, which it ignores) run once and are listed under each scenario.

    Args:
        runs: The grid, in the order results should be listed.
        out: Output folder (finished runs are stored in ``out/runs``).
        jobs: Local worker processes (joblib ``loky``; 1: in this process).
        cluster: Run on Dask instead (see :func:`engine`).
        progress: Show a progress bar over runs.
        run_fn: What runs one run (default :func:`execute`); tests count calls with it.

    Examples:
        >>> import tempfile
        >>> s = Scenario(n_agents=2, n_arms=2, horizon=20)
        >>> grid = [Run("base", s, "random", trial=j, record_every=10) for j in range(3)]
        >>> out = tempfile.mkdtemp()
        >>> [c.regret.shape for c in run_sweep(grid, out, progress=False)]
        [(3, 2, 2)]
        >>> calls = []
        >>> _ = run_sweep(grid, out, progress=False, run_fn=calls.append)  # all stored
        >>> calls
        []
    """
    from joblib import Parallel, delayed, parallel_config

    unique = {r.key: r for r in runs}  # a policy that ignores a grid option runs once
    store = Path(out) / "runs"
    done = stored_runs(store, unique)
    pending = [r for k, r in unique.items() if k not in done]
    fn = run_fn or execute
    bar = tqdm(total=len(unique), initial=len(done), desc="sweep", unit="run", disable=not progress)
    try:
        if pending:
            with engine(jobs, cluster) as (backend, n_jobs), parallel_config(backend=backend):
                tasks = (delayed(_tagged)(fn, r) for r in pending)
                for key, curves in Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks):
                    save_run(curves, store / f"{key}.npz")
                    bar.update()
    finally:
        bar.close()
    return merge_runs([load_run(r, store / f"{r.key}.npz") for r in runs])


def _tagged(fn: Callable[[Run], RegretCurves], run: Run) -> tuple[str, RegretCurves]:
    return run.key, fn(run)


def merge_runs(curves: Sequence[RegretCurves]) -> list[RegretCurves]:
    """Stack single-run curves into one per (scenario, policy), in order of first
    appearance, trials sorted by seed.

    Examples:
        >>> one = lambda j: RegretCurves("p", np.array([5]), np.full((1, 2, 1), float(j)),
        ...                              seeds=np.array([j]))
        >>> [c.seeds.tolist() for c in merge_runs([one(1), one(0)])]
        [[0, 1]]
    """
    groups: dict[tuple[str, str], list[RegretCurves]] = {}
    for c in curves:
        groups.setdefault((c.scenario, c.policy), []).append(c)
    out = []
    for (label, policy), parts in groups.items():
        parts = sorted(parts, key=lambda c: int(c.seeds[0]))
        first = parts[0]
        if any(not np.array_equal(p.t, first.t) for p in parts):
            raise ValueError(f"{label} {policy}: runs recorded different steps")
        merged = RegretCurves(
            policy,
            first.t,
            np.concatenate([p.regret for p in parts]),
            np.concatenate([p.seconds for p in parts]),
            comm_cost=np.concatenate([p.comm_cost for p in parts]),
            privacy_spent=first.privacy_spent,
            privacy_delta=first.privacy_delta,
            seeds=np.concatenate([p.seeds for p in parts]),
            scenario=label,
            setting=first.setting,
        )
        merged.meta.update(first.meta)
        out.append(merged)
    return out
