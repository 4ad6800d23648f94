"""The architecture's rules, checked: the core never imports ``baselines``, modules stay
small, ``fedbandit --help`` imports nothing heavy, each reference family is one folder."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fedbandit_env import registry
from fedbandit_env.vector.policy import VectorTeam

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 1100
"""A ceiling, not a target: module size is a review signal (around 600 lines, ask whether
a module holds one concern; docs/guides/contributing.md says so), and cohesive
modules of 900-1,100 lines are kept whole, as Gymnasium and stable-baselines3 keep
theirs. Only a module past this line fails."""
LONGER: dict[str, int] = {}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imported_modules(path: Path) -> set[str]:
    """Every module an ``import`` statement of ``path`` names (code, not docstrings)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_core_never_imports_baselines() -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(
            m for m in _imported_modules(p) if m.split(".")[0] == "baselines"
        )
        for p in _modules("fedbandit_env")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


LAYERS: dict[str, tuple[str, ...]] = {
    "fedbandit_env/core": ("envs", "vector", "wrappers", "runner", "rl", "scenario", "cli"),
    "fedbandit_env/vector": ("runner", "rl", "scenario", "cli", "reproduce"),
    "fedbandit_env/envs": ("runner", "rl", "scenario", "cli", "reproduce"),
    "fedbandit_env/privacy": ("wrappers", "envs", "vector", "runner", "rl", "scenario"),
    "fedbandit_env/wrappers": ("runner", "rl", "scenario", "cli", "reproduce"),
    "fedbandit_env/scenario": ("runner", "rl", "cli", "reproduce"),
    "fedbandit_env/rl": ("runner", "cli", "reproduce"),
}
"""Which packages each layer never imports (lazy imports included): the core
(``MABCore`` and its router) below both of its views, the batched env and its PettingZoo
view below the wrappers, privacy below the wrappers, the scenario
below both the runner and the learners, and the learners below the runner (the runner
evaluates saved models, so it may import ``rl``; never the reverse)."""


def _layer_violations(folder: str, banned: tuple[str, ...]) -> list[str]:
    bad = []
    for path in _modules(folder):
        for name in _imported_modules(path):
            parts = name.split(".")
            if parts[0] == "fedbandit_env" and len(parts) > 1 and parts[1] in banned:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


@pytest.mark.parametrize("folder", sorted(LAYERS))
def test_each_layer_imports_only_the_layers_below(folder: str) -> None:
    assert _layer_violations(folder, LAYERS[folder]) == []


def test_the_layer_check_can_fail() -> None:
    """rl is allowed runner-free; the runner imports rl (it evaluates models): the
    check, run on the runner with rl banned, finds it."""
    assert _layer_violations("fedbandit_env/runner", ("rl",))


def _import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Which of the modules under ``root/packages`` each of them imports: every ``import``
    and ``from ... import`` at any depth (lazy imports in functions included; relative
    ones resolved), except under ``if TYPE_CHECKING:`` (annotations, never executed).
    A module that names a package imports its ``__init__``; importing ``a.b.c`` does not
    count as importing ``a`` or ``a.b`` (a package's own ``__init__`` re-exporting its
    modules is not a circle of layers)."""
    paths = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        tree = ast.parse(path.read_text())
        skipped = {
            id(node)
            for branch in ast.walk(tree)
            if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
            for node in ast.walk(branch)
        }
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{alias.name}" for alias in node.names]
                targets = [t for t in targets if t in paths] or [base]
            else:
                continue
            for target in targets:
                while target and target not in paths:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _circles(graph: dict[str, set[str]], unit: Any = None) -> list[list[str]]:
    """The import circles of ``graph`` (its strongly connected components of more than
    one node), after mapping each module to its ``unit`` (a package: its folder)."""
    import networkx as nx

    g = nx.DiGraph()
    for a, targets in graph.items():
        for b in targets:
            ua, ub = (a, b) if unit is None else (unit(a), unit(b))
            if ua != ub:
                g.add_edge(ua, ub)
    return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def _package_of(graph: dict[str, set[str]]) -> Any:
    """A module's unit at the package level: its subpackage (a module directly in a
    top-level package is its own unit, as ``validation`` or ``registry``)."""
    packages = {m for m in graph if any(o.startswith(m + ".") for o in graph)}

    def unit(module: str) -> str:
        parent = module.rpartition(".")[0]
        if module in packages or parent.count(".") == 0:
            return module
        return parent

    return unit


def test_no_import_circle_anywhere() -> None:
    """Issue 62 item 3: no module of ``fedbandit_env`` or ``baselines`` imports, however
    indirectly and however lazily, one that imports it back, and no package does: the
    core (``fedbandit_env.core``: ``MABCore`` and its router) sits below the PettingZoo
    env and the vector env that view it, the conditions of tuned policies below both
    ``evaluate`` and ``tune``, torch's thread count below every SB3 adapter, and the
    scenario's constant lists in ``checks``."""
    graph = _import_graph(ROOT, ("fedbandit_env", "baselines"))
    assert _circles(graph) == []
    assert _circles(graph, _package_of(graph)) == []


def test_the_circle_check_can_fail(tmp_path: Path) -> None:
    """A lazy import back, through a relative import, and a circle of packages whose
    modules form no circle are each found."""
    pkg = tmp_path / "p"
    for folder, files in {"a": {"x": "from p.b.y import f\n", "z": ""},
                          "b": {"y": "def f():\n    from ..a import z\n"}}.items():  # fmt: skip
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
        for stem, text in files.items():
            (pkg / folder / f"{stem}.py").write_text(text)
    (pkg / "__init__.py").write_text("")
    graph = _import_graph(tmp_path, ("p",))
    assert graph["p.b.y"] == {"p.a.z"} and _circles(graph) == []
    assert _circles(graph, _package_of(graph)) == [["p.a", "p.b"]]
    (pkg / "a" / "z.py").write_text("import p.a.x\n")
    assert _circles(_import_graph(tmp_path, ("p",))) == [["p.a.x", "p.a.z", "p.b.y"]]


def test_the_core_loaded_whole_leaves_baselines_unimported() -> None:
    code = (
        "import importlib, pkgutil, sys, fedbandit_env\n"
        "for m in pkgutil.walk_packages(fedbandit_env.__path__, 'fedbandit_env.'):\n"
        "    if not m.name.startswith('fedbandit_env.rl'):\n"
        "        importlib.import_module(m.name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'baselines'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", ["fedbandit_env", "baselines"])
def test_no_module_is_past_the_ceiling(package: str) -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in _modules(package)}
    too_long = {name: n for name, n in sizes.items() if n > LONGER.get(name, MAX_LINES)}
    assert too_long == {}


def test_help_imports_no_subcommand() -> None:
    code = (
        "import sys\n"
        "from fedbandit_env.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('numba', 'scipy', 'networkx', 'baselines', 'matplotlib', 'torch')\n"
        "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "bench" in out.stdout and "list" in out.stdout
    assert out.stderr.strip() == "[]"


def test_each_reference_family_is_one_folder() -> None:
    for pid in registry.policy_ids():
        spec = registry.spec(pid)
        if not str(spec.entry_point).startswith("baselines."):
            continue  # a user's policy registered by another test module
        family = str(spec.entry_point).split(":")[0].split(".")[1]
        assert family == spec.family, pid
        folder = ROOT / "baselines" / family
        # a family of vector policies runs batched as it is (the vector env is its fast
        # path): no compiled loop of its own
        vector = isinstance(spec.make(), VectorTeam)
        needed = {"__init__.py", "policies.py"} | (set() if vector else {"kernels.py", "fast.py"})
        assert needed <= {p.name for p in folder.glob("*.py")}, family
        if spec.fast_entry_point is not None:  # a variant may run on the PettingZoo path only
            assert str(spec.fast_entry_point).startswith(f"baselines.{family}.fast:"), pid


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant of ``path`` that is code: docstrings (a string statement of
    a module, class, function or attribute) are left out; f-string pieces are kept."""
    tree = ast.parse(path.read_text())
    docs = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def test_the_core_names_no_registered_policy_id() -> None:
    """What the core needs to know about a policy is declared at its registration
    (tags, settings, options), so no code string of ``fedbandit_env`` names an id: not
    as a whole string, and for ids with an underscore (names no English word shares)
    not inside a longer string either (help texts). A string that is a member of another
    vocabulary of the core (the Byzantine behaviour ``"random"``, the diabetes split
    ``"random"``) is that vocabulary's word, not a policy's id."""
    from typing import get_args

    from fedbandit_env.problems.diabetes import Split
    from fedbandit_env.wrappers.byzantine import BEHAVIOURS

    ids = set(registry.policy_ids())
    other_words = set(BEHAVIOURS) | set(get_args(Split))
    distinctive = [i for i in ids if "_" in i]
    found = []
    for path in _modules("fedbandit_env"):
        for line, text in _code_strings(path):
            named = {text} & ids - other_words
            named |= {i for i in distinctive if re.search(rf"(?<![\w*]){re.escape(i)}(?!\w)", text)}
            if named:
                found.append(f"{path.relative_to(ROOT)}:{line} {sorted(named)}")
    assert found == []


def test_the_id_scan_can_fail(tmp_path: Path) -> None:
    """The scan above catches an id in code and in a help text, not in a docstring."""
    bad = tmp_path / "m.py"
    bad.write_text('"""Docs may say gossip_ucb."""\nX = "gossip_ucb"\nY = f"see fed_ucb, {X}"\n')
    texts = [t for _, t in _code_strings(bad)]
    assert "gossip_ucb" in texts and any("fed_ucb" in t for t in texts)
    assert not any("Docs may say" in t for t in texts)


def test_no_test_folder_shadows_a_package() -> None:
    """A folder of tests named like a package (``tests/baselines``) is imported in its
    place under an editable install (a namespace portion found on ``sys.path`` before
    setuptools' finder is asked): ``from baselines.linear import FedLinUCB`` then fails."""
    shadows = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("*")
        if p.is_dir() and p.name in {"baselines", "fedbandit_env"}
    )
    assert shadows == []


def test_every_entry_point_is_written_out_where_it_is_registered() -> None:
    """A search for ``run_cdp_mab`` finds its registration: no entry point is built
    with an f-string (issue 53, item 8)."""
    text = (ROOT / "baselines" / "registration.py").read_text()
    for pid in registry.policy_ids():
        spec = registry.spec(pid)
        if not str(spec.entry_point).startswith("baselines."):
            continue
        for entry in (spec.entry_point, spec.fast_entry_point, spec.options_entry_point):
            if isinstance(entry, str):
                assert f'"{entry}"' in text, (pid, entry)


def test_test_modules_have_unique_basenames() -> None:
    """The test folders are not packages, so pytest imports each test module by its file
    name: two ``test_learned.py`` stop the whole collection (the CI failure of
    2026-11-27)."""
    names: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {n: p for n, p in names.items() if len(p) > 1} == {}


REWARD_DRAWS = frozenset({"draw_reward", "reward_of", "rewards_of", "noise_draws"})
"""The functions that turn random numbers into rewards (``problems``)."""
ENV_STEPS = {
    "fedbandit_env/core/mab.py::MABCore.step": "the array step of B envs (any device)",
    "fedbandit_env/core/kernels.py::step_envs": "MABCore.step on NumPy, and its rollouts",
    "fedbandit_env/core/kernels.py::pull_arms": "the step the multi-armed compiled loops call",
    "fedbandit_env/core/kernels.py::pull_sets": "the step the linear env and loops call",
    "baselines/linear/batched.py::batched_trial": "a NumPy yardstick (issue 62 item 2 retires it)",
    "baselines/linear/naive.py::naive_trial": "a NumPy yardstick (issue 62 item 2 retires it)",
}
"""Every function allowed to draw rewards and add regret, and why: an env step is written
in the core, and families call it."""


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of ``function``'s body, nested functions and classes left out."""
    found: list[ast.AST] = []
    stack = list(getattr(function, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _called(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _writes_an_env_step(function: ast.AST) -> bool:
    """Whether ``function`` draws rewards (a reward kernel, or ``problem.sample``) and adds
    regret (``+=`` of a gap, a regret or the global means)."""
    nodes = _own_nodes(function)
    draws = any(
        _called(n) in REWARD_DRAWS
        or (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "sample"
            and "problem" in ast.unparse(n.func.value)
        )
        for n in nodes
    )
    adds = any(
        isinstance(n, ast.AugAssign)
        and isinstance(n.op, ast.Add)
        and any(word in ast.unparse(n) for word in ("gap", "regret", "global_means"))
        for n in nodes
    )
    return draws and adds


def _env_steps(paths: list[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        tree = ast.parse(path.read_text())
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
        for node in tree.body:
            members = node.body if isinstance(node, ast.ClassDef) else [node]
            prefix = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
            for fn in members:
                if isinstance(fn, ast.FunctionDef) and _writes_an_env_step(fn):
                    found.add(f"{name}::{prefix}{fn.name}")
    return found


def test_an_env_step_is_written_only_in_the_core() -> None:
    """Issue 62: the reward draws and the regret of a step are written in the core
    (``MABCore.step``, ``core.kernels``); the families' compiled loops and the linear env
    call it. Once fourteen functions wrote a step out (twelve loops, the two envs)."""
    found = _env_steps(_modules("fedbandit_env") + _modules("baselines"))
    assert found == set(ENV_STEPS)


def test_the_env_step_scan_can_fail(tmp_path: Path) -> None:
    """Power: a loop that draws its rewards and adds the gaps itself is found."""
    loop = tmp_path / "loop.py"
    loop.write_text(
        "def trial(mu, arms, rng, gaps, rewards, cum):\n"
        "    for i in range(arms.size):\n"
        "        rewards[i] = draw_reward(mu[i, arms[i]], 0, 1.0, rng)\n"
        "        cum[i] += gaps[arms[i]]\n"
        "class Env:\n"
        "    def step(self, rows):\n"
        "        y = self.problem.sample(rows, self.rng)\n"
        "        self.regret += self.problem.gaps(self.sets, rows)\n"
        "        return y\n"
    )
    assert _env_steps([loop]) == {"loop.py::trial", "loop.py::Env.step"}


def _compiled(node: ast.FunctionDef) -> tuple[bool, bool] | None:
    """For a compiled function: whether its annotated result is an array, and whether it
    is inlined (``None``: not compiled)."""
    if not any("njit" in ast.unparse(d) for d in node.decorator_list):
        return None
    returns = ast.unparse(node.returns) if node.returns else ""
    inlined = any(
        isinstance(d, ast.Call)
        and any(
            k.arg == "inline" and getattr(k.value, "value", None) == "always" for k in d.keywords
        )
        for d in node.decorator_list
    )
    return any(word in returns for word in ("Array", "ndarray")), inlined


def _uncounted_calls_to_array_helpers(paths: list[Path]) -> set[str]:
    """``kernel -> helper`` for every uncounted kernel (``**UNCOUNTED``) from which a
    compiled helper that returns an array and is not inlined is reached: numba compiles
    every function an uncounted kernel calls, and what those call, under its options
    (inlined ones into it)."""
    compiled: dict[str, tuple[ast.FunctionDef, bool, bool]] = {}
    kernels: list[tuple[str, ast.FunctionDef]] = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            facts = _compiled(node)
            if facts is not None:
                compiled[node.name] = (node, *facts)
            if any("UNCOUNTED" in ast.unparse(d) for d in node.decorator_list):
                kernels.append((path.name, node))
    found = set()
    for name, kernel in kernels:
        seen, todo = {kernel.name}, [kernel]
        while todo:
            for called in {_called(n) for n in ast.walk(todo.pop())} - seen:
                if called in compiled:
                    seen.add(called)
                    node, returns_array, inlined = compiled[called]
                    if returns_array and not inlined:
                        found.add(f"{name}::{kernel.name} -> {called}")
                    todo.append(node)
    return found


def test_no_uncounted_kernel_calls_a_helper_that_returns_an_array() -> None:
    """An uncounted kernel compiles the helpers it calls without reference counts, and
    numba keeps that compile for every later caller: a returned array then goes uncounted
    and is freed under its owner (``core.kernels.UNCOUNTED``). Such helpers must be
    inlined."""
    assert (
        _uncounted_calls_to_array_helpers(_modules("fedbandit_env") + _modules("baselines"))
        == set()
    )


def test_the_uncounted_call_scan_can_fail(tmp_path: Path) -> None:
    """Power: a step that calls an array-returning helper, itself or through a helper
    that returns none, is found; inlined, it is not."""
    module = tmp_path / "kernels.py"
    source = (
        "@njit(cache=True)\n"
        "def index(counts: FloatArray) -> FloatArray:\n"
        "    return counts\n"
        "@njit(cache=True)\n"
        "def choose(counts: FloatArray) -> int:\n"
        "    return int(index(counts)[0])\n"
        "@njit(cache=True, **UNCOUNTED)\n"
        "def step(counts: FloatArray, arms: IntArray) -> None:\n"
        "    arms[0] = choose(counts)\n"
    )
    module.write_text(source)
    assert _uncounted_calls_to_array_helpers([module]) == {"kernels.py::step -> index"}
    module.write_text(source.replace("@njit(cache=True)\n", '@njit(cache=True, inline="always")\n'))
    assert _uncounted_calls_to_array_helpers([module]) == set()
