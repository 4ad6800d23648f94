"""The policy registry: policies by id, the way Gymnasium registers envs.

A policy is registered once, under an id, with an *entry point*: a callable, or a
``"module:attr"`` string imported on first use, that returns a :class:`Team` or a
per-agent :class:`Policy` (which :func:`make` runs as one copy per agent). The runner,
the sweeps and the ``fedbandit`` command know policies only through this registry, so a
policy registered here runs everywhere a reference one does::

    from fedbandit_env import registry
    registry.register("my_policy", entry_point="my_package.policies:MyPolicy")

Then ``fedbandit bench --import my_package.policies --policies my_policy`` (a module
name or a ``.py`` file; :func:`import_plugin`), or, for an installed package, an entry
point in its ``pyproject.toml`` (below).

Besides the policy, a spec may name:

- a **fast entry point** (Gymnasium's ``vector_entry_point``): a compiled per-trial
  runner ``(setup, (env_seed, team_seed)) -> TrialResult`` that
  :func:`fedbandit_env.runner.fast.run_fast` drives, giving the same results as the
  PettingZoo path, much faster;
- an **options entry point**: how the setting options of ``fedbandit bench`` and
  ``fedbandit sweep`` (``epsilon``, ``participation``, ...) become the policy's
  constructor arguments, ``(options, problem) -> kwargs``. Without one the policy gets
  no options from the command line (only the spec's ``kwargs``).

Plugins: an installed package adds its policies by naming a function that calls
:func:`register` in the entry point group ``fedbandit_env.policies`` of its
``pyproject.toml``::

    [project.entry-points."fedbandit_env.policies"]
    my_package = "my_package.registration:register_policies"

The group is loaded on the first lookup (:func:`make`, :func:`spec`, :func:`policy_ids`).
The reference policies of ``baselines`` are registered exactly this way: the core
package never imports them.

Examples:
    >>> from fedbandit_env.policies import FixedArm
    >>> s = register("always_one", FixedArm, kwargs={"arm": 1}, description="pulls arm 1")
    >>> team = make("always_one")
    >>> team.name, "always_one" in policy_ids()
    ('always_one', True)
    >>> deregister("always_one")
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedbandit_env.entry_points import (
    ENTRY_POINT_GROUP,
    EntryPoint,
    import_plugin,
    load_entry_point,
    load_plugins,
)

if TYPE_CHECKING:  # the registry imports nothing heavy until a policy is made
    from fedbandit_env.policies import Team


_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")


BANDITS = ("mab", "linear", "any")
"""The kinds of bandit a policy can declare it plays (``PolicySpec.bandit``)."""

TAGS: dict[str, str] = {
    "default": "fedbandit bench runs it when no --policies are given (on its kind of "
    "bandit; with --setting, if it is meant for that setting)",
    "floor": "the lower bound every table shows (compare() and bench add it)",
    "pooled": "the pooled reference every table shows (compare() and bench add it): "
    "privileged, one learner on every agent's raw rewards; a reference outside the "
    "setting, not an upper bound (cooperative policies can beat its index)",
    "local": "the no-communication reference: a lone learner's teammates by default",
    "speed": "measured by fedbandit speed (needs a fast path)",
    "strongest": "measured among the strongest of a setting with messages by the yardstick "
    "(docs/yardstick.md: the best row and every row whose interval overlaps it; a test "
    "keeps the tags in step with the page): what fedbandit train and tune suggest "
    "benching a result beside",
    "tunable": "a vector policy with TUNABLE parameters: what fedbandit tune searches by "
    "default in the settings it runs in",
    "learned": "a trained network shipped as a reference (its weights in the package; the "
    "command that trains it in its module)",
}
"""What a policy's registration can declare about its role (``PolicySpec.tags``); the
core reads these and names no policy id."""


@dataclass(frozen=True)
class PolicyOption:
    """A constructor option a policy declares at registration; ``fedbandit bench`` and
    ``fedbandit sweep`` build a flag from it (``--name`` with ``-`` for ``_``).

    Attributes:
        name: The constructor argument (and the flag's name).
        type: ``int``, ``float`` or ``str``.
        default: The flag's default: the constructor's own default (a flag left at it
            passes nothing).
        help: One line for ``--help`` (the policies that read it are added).
        low: Smallest value allowed (``None``: no bound).
        high: Largest value allowed (``None``: no bound).
        low_open: Whether ``low`` itself is refused.
        choices: The values allowed, for a ``str`` option.

    Examples:
        >>> o = PolicyOption("rate", float, 1.0, "share", low=0.0, high=1.0, low_open=True)
        >>> o.flag, o.check(0.5)
        ('--rate', 0.5)
        >>> PolicyOption("kappa", float, 10.0, "pulls", low=0.0, low_open=True).check(0.0)
        Traceback (most recent call last):
        ...
        ValueError: --kappa (kappa) must lie in (0, inf), got 0.0
    """

    name: str
    type: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not re.match(r"^[a-z][a-z0-9_]*$", self.name):
            raise ValueError(f"option name must be a lower-case identifier, got {self.name!r}")
        if self.type not in (int, float, str):
            raise TypeError(f"option {self.name!r}: type must be int, float or str")

    @property
    def flag(self) -> str:
        """The command-line flag."""
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """``value`` if the option allows it, else a ``ValueError`` naming the flag."""
        if self.choices is not None and value not in self.choices:
            raise ValueError(
                f"{self.flag} ({self.name}) must be one of {list(self.choices)}, got {value!r}"
            )
        if self.type is str:
            return value
        bad = (
            self.low is not None and (value < self.low or (self.low_open and value == self.low))
        ) or (self.high is not None and value > self.high)
        if bad or value != value:  # nan is never in range
            lo = "(" if self.low_open or self.low is None else "["
            low = "-inf" if self.low is None else f"{self.low:g}"
            high = "inf)" if self.high is None else f"{self.high:g}]"
            raise ValueError(
                f"{self.flag} ({self.name}) must lie in {lo}{low}, {high}, got {value!r}"
            )
        return value


@dataclass(frozen=True)
class PolicySpec:
    """A registered policy: how to make it, what it is, and its optional fast path.

    Attributes:
        id: The name ``make`` and ``fedbandit bench --policies`` take (a letter, then
            letters, digits, ``_``, ``.``, ``-``; never ``:``, which marks saved models).
        entry_point: Callable (or ``"module:attr"``) returning a :class:`Team`, a
            per-agent :class:`Policy` or a
            :class:`~fedbandit_env.vector.policy.VectorPolicy`.
        description: One line for listings (``fedbandit list``).
        family: The algorithm family (a folder of ``baselines``, or the user's).
        kwargs: Default constructor arguments (call arguments win).
        fast_entry_point: A per-trial runner for
            :func:`~fedbandit_env.runner.fast.run_fast` (``None``: PettingZoo path only).
        options_entry_point: ``(options, problem) -> kwargs``: the constructor
            arguments the command line's setting options give this policy.
        settings: The information settings (:data:`fedbandit_env.settings.SETTINGS`)
            the policy is meant for; ``None``: any that gives it what it needs.
        privileged: A reference outside the contest, not a competitor (the oracle that
            pools every agent's raw rewards; not an upper bound): in a setting it runs
            on its own env, outside the setting, and results mark it.
        bandit: The bandit it plays: ``"mab"`` (``federated_mab_v0``, the default),
            ``"linear"`` (``federated_linear_v0``) or ``"any"``; the runner refuses it on
            the other kind with a clear error.
        tags: Its roles, from :data:`TAGS` (``"default"``, ``"floor"``, ``"pooled"``,
            ``"local"``, ``"speed"``): where ``bench``, ``compare``, ``train`` and
            ``speed`` use it without being told its id.
        instances: The instance kinds (``Scenario.instance``) it is meant for (``None``:
            any): ``bench`` runs it by default only on those, and warns when it is named
            on another (it still runs: measuring a policy off its assumptions is allowed).
        cli_options: The constructor options it declares (:class:`PolicyOption`): the
            command line gets a flag for each, and without an options entry point a flag
            set away from its default becomes the constructor argument of that name.

    Examples:
        >>> s = PolicySpec("p", "fedbandit_env.policies:FixedArm", kwargs={"arm": 2})
        >>> s.make().name, s.has_fast_path
        ('p', False)
    """

    id: str
    entry_point: EntryPoint
    description: str = ""
    family: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    fast_entry_point: EntryPoint | None = None
    options_entry_point: EntryPoint | None = None
    settings: tuple[str, ...] | None = None
    privileged: bool = False
    bandit: str = "mab"
    tags: frozenset[str] = frozenset()
    cli_options: tuple[PolicyOption, ...] = ()
    instances: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "cli_options", tuple(self.cli_options))
        if self.instances is not None:
            if isinstance(self.instances, str):
                raise TypeError(f"instances of {self.id!r} must be a tuple of names")
            object.__setattr__(self, "instances", tuple(self.instances))
        if not all(isinstance(o, PolicyOption) for o in self.cli_options):
            raise TypeError(f"cli_options of {self.id!r} must be PolicyOption objects")
        if isinstance(self.tags, str):
            raise TypeError(f"tags of {self.id!r} must be a collection of names, got {self.tags!r}")
        object.__setattr__(self, "tags", frozenset(self.tags))
        unknown_tags = sorted(self.tags - set(TAGS))
        if "ceiling" in unknown_tags:  # renamed: the oracle is not an upper bound
            raise ValueError(
                f"tags of {self.id!r}: the tag 'ceiling' is now 'pooled' (the pooled oracle "
                "is a privileged reference, not an upper bound)"
            )
        if unknown_tags:
            raise ValueError(
                f"tags of {self.id!r} must be among {sorted(TAGS)}, got {unknown_tags}"
            )
        if "speed" in self.tags and self.fast_entry_point is None:
            raise ValueError(f"{self.id!r} is tagged 'speed' but has no fast_entry_point")
        if self.bandit not in BANDITS:
            raise ValueError(f"bandit of {self.id!r} must be one of {BANDITS}, got {self.bandit!r}")
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ValueError(
                f"policy id must start with a letter and hold only letters, digits, '_', "
                f"'.', '-' (no ':', which marks saved models), got {self.id!r}"
            )
        for name in ("entry_point", "fast_entry_point", "options_entry_point"):
            value = getattr(self, name)
            if value is None and name != "entry_point":
                continue
            if not (callable(value) or isinstance(value, str)):
                raise TypeError(
                    f"{name} of {self.id!r} must be a callable or 'module:attr', got {value!r}"
                )
        if not isinstance(self.kwargs, Mapping):
            raise TypeError(f"kwargs of {self.id!r} must be a mapping, got {self.kwargs!r}")
        if self.settings is not None:
            from fedbandit_env.settings import SETTINGS

            object.__setattr__(self, "settings", tuple(self.settings))
            unknown = [s for s in self.settings if s not in SETTINGS]
            if unknown:
                raise ValueError(
                    f"settings of {self.id!r} must be names of {sorted(SETTINGS)}, got {unknown}"
                )

    def plays(self, bandit: str) -> bool:
        """Whether the policy plays the bandit kind ``bandit`` (``"mab"``, ``"linear"``).

        Examples:
            >>> spec("gossip_ucb").plays("mab"), spec("gossip_ucb").plays("linear")
            (True, False)
        """
        return self.bandit in (bandit, "any")

    def meant_for(self, instance: str) -> bool:
        """Whether the policy is meant for the instance kind ``instance``.

        Examples:
            >>> spec("gossip_ucb").meant_for("conflicting")
            True
        """
        return self.instances is None or instance in self.instances

    def runs_in(self, setting: str) -> bool:
        """Whether the policy is meant for the information setting ``setting``.

        Examples:
            >>> spec("fed_ucb").runs_in("gossip+private"), spec("fed_ucb").runs_in("local")
            (True, False)
        """
        return self.settings is None or setting in self.settings

    @property
    def has_fast_path(self) -> bool:
        """Whether a compiled per-trial runner is registered."""
        return self.fast_entry_point is not None

    def make(self, **kwargs: Any) -> Team:
        """A fresh team of this policy (``kwargs`` over the spec's defaults).

        A per-agent :class:`~fedbandit_env.policies.Policy` becomes an
        :class:`~fedbandit_env.policies.IndependentTeam` (a new copy per agent at every
        reset), a :class:`~fedbandit_env.vector.policy.VectorPolicy` a
        :class:`~fedbandit_env.vector.policy.VectorTeam` (which the runner plays on the
        vector env); a :class:`~fedbandit_env.policies.Team` is returned as it is.

        Raises:
            TypeError: If the entry point returns neither, or rejects the arguments.
        """
        from fedbandit_env.policies import IndependentTeam, Policy, Team

        factory = load_entry_point(self.entry_point, f"entry point of {self.id!r}")
        merged = {**self.kwargs, **kwargs}
        made = factory(**merged)
        if isinstance(made, Team):
            return made
        if isinstance(made, Policy):
            return IndependentTeam(lambda: factory(**merged), name=self.id)
        from fedbandit_env.vector.policy import VectorPolicy, VectorTeam

        if isinstance(made, VectorPolicy):
            return VectorTeam(made, name=self.id)
        raise TypeError(
            f"entry point of {self.id!r} returned {type(made).__name__}, not a Team, Policy "
            "or VectorPolicy"
        )

    def fast_runner(self) -> Callable[..., Any]:
        """The registered per-trial runner.

        Raises:
            ValueError: If the policy has no fast path.
        """
        if self.fast_entry_point is None:
            raise ValueError(f"policy {self.id!r} has no fast path")
        runner: Callable[..., Any] = load_entry_point(
            self.fast_entry_point, f"fast entry point of {self.id!r}"
        )
        return runner

    def options(self, settings: Mapping[str, Any], problem: Any) -> dict[str, Any]:
        """The constructor arguments that the setting options give this policy.

        Examples:
            >>> PolicySpec("p", "fedbandit_env.policies:FixedArm").options({"epsilon": 1}, None)
            {}
        """
        if self.options_entry_point is None:
            return {
                o.name: settings[o.name]
                for o in self.cli_options
                if o.name in settings and settings[o.name] != o.default
            }
        hook = load_entry_point(self.options_entry_point, f"options entry point of {self.id!r}")
        return dict(hook(settings, problem))


_registry: dict[str, PolicySpec] = {}
_plugins_loaded = False


def register(
    id: str,
    entry_point: EntryPoint,
    *,
    description: str = "",
    family: str = "",
    kwargs: Mapping[str, Any] | None = None,
    fast_entry_point: EntryPoint | None = None,
    options_entry_point: EntryPoint | None = None,
    settings: tuple[str, ...] | None = None,
    privileged: bool = False,
    bandit: str = "mab",
    tags: tuple[str, ...] | frozenset[str] | str = (),
    cli_options: tuple[PolicyOption, ...] = (),
    instances: tuple[str, ...] | None = None,
) -> PolicySpec:
    """Register a policy under ``id`` (see :class:`PolicySpec` for the arguments).

    Registering the same spec again is a no-op; a different spec under a known id
    replaces it with a warning (as Gymnasium does).

    Examples:
        >>> from fedbandit_env.policies import FixedArm
        >>> register("arm_zero", FixedArm).id
        'arm_zero'
        >>> deregister("arm_zero")
    """
    new = PolicySpec(
        id,
        entry_point,
        description=description,
        family=family,
        kwargs=dict(kwargs or {}),
        fast_entry_point=fast_entry_point,
        options_entry_point=options_entry_point,
        settings=settings,
        privileged=privileged,
        bandit=bandit,
        tags=frozenset({tags} if isinstance(tags, str) else tags),  # one tag may be a str
        cli_options=tuple(cli_options),
        instances=instances,
    )
    old = _registry.get(id)
    if old is not None and old != new:
        warnings.warn(f"overriding policy {id!r} in the registry", UserWarning, stacklevel=2)
    _registry[id] = new
    return new


def deregister(id: str) -> None:
    """Remove ``id`` from the registry (for tests and notebooks).

    Raises:
        ValueError: For an id that is not registered.
    """
    if id not in _registry:
        raise ValueError(f"policy {id!r} is not registered")
    del _registry[id]


def _ensure_plugins() -> None:
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True
        load_plugins()


def spec(id: str) -> PolicySpec:
    """The spec registered under ``id``.

    Raises:
        ValueError: For an unknown id, listing the known ones.

    Examples:
        >>> spec("gossip_ucb").family
        'gossip'
    """
    _ensure_plugins()
    if id not in _registry:
        raise ValueError(f"unknown policy id {id!r}; known ids: {sorted(_registry)}")
    return _registry[id]


def make(id: str, **kwargs: Any) -> Team:
    """A team of the policy registered under ``id``; ``kwargs`` go to its constructor.

    Examples:
        >>> make("fed_ucb", epsilon=2.0).requirements(3, 4).epsilon
        2.0
    """
    return spec(id).make(**kwargs)


def policy_ids() -> list[str]:
    """Every registered id, sorted.

    Examples:
        >>> {"gossip_ucb", "local_ucb"} <= set(policy_ids())
        True
    """
    _ensure_plugins()
    return sorted(_registry)


def declared_options() -> dict[str, tuple[PolicyOption, list[str]]]:
    """Every option the registered policies declare, by name, with the ids that declare
    it (one flag each).

    Raises:
        ValueError: If two policies declare one name with different types or defaults.

    Examples:
        >>> opts = declared_options()
        >>> opts["participation"][0].type, opts["participation"][1]
        (<class 'float'>, ['cdp_mab'])
    """
    _ensure_plugins()
    out: dict[str, tuple[PolicyOption, list[str]]] = {}
    for pid, s in _registry.items():
        for o in s.cli_options:
            if o.name in out:
                first, ids = out[o.name]
                if (first.type, first.default) != (o.type, o.default):
                    raise ValueError(
                        f"option {o.flag}: {pid} declares {o.type.__name__} = {o.default!r}, "
                        f"{ids[0]} {first.type.__name__} = {first.default!r}"
                    )
                ids.append(pid)
            else:
                out[o.name] = (o, [pid])
    return out


def tagged(tag: str, bandit: str = "mab") -> list[str]:
    """The ids tagged ``tag`` (:data:`TAGS`) that play ``bandit``, in registration order.

    Raises:
        ValueError: For an unknown tag or bandit kind.

    Examples:
        >>> tagged("floor"), tagged("pooled"), tagged("pooled", "linear")
        (['random'], ['oracle_ucb'], ['pooled_lin_ucb'])
    """
    if tag not in TAGS:
        raise ValueError(f"unknown tag {tag!r}; tags are {sorted(TAGS)}")
    if bandit not in BANDITS:
        raise ValueError(f"bandit must be one of {BANDITS}, got {bandit!r}")
    _ensure_plugins()
    return [k for k, s in _registry.items() if tag in s.tags and s.plays(bandit)]


def describe_registry() -> str:
    """The registry as a table: id, family, bandit, fast path, tags, the settings and
    the instance kinds it is meant for (``any``: every one that gives it what it needs),
    description (``fedbandit list``).

    Examples:
        >>> describe_registry().splitlines()[0].split()
        ['id', 'family', 'bandit', 'fast', 'tags', 'settings', 'instances', 'description']
    """
    _ensure_plugins()
    specs = [_registry[k] for k in sorted(_registry, key=lambda k: (_registry[k].family, k))]
    rows = [("id", "family", "bandit", "fast", "tags", "settings", "instances", "description")]
    for s in specs:
        settings = "any" if s.settings is None else ",".join(s.settings) or "-"
        instances = "any" if s.instances is None else ",".join(s.instances) or "-"
        tags = ",".join(sorted(s.tags)) or "-"
        fast = "yes" if s.has_fast_path else "-"
        rows.append((s.id, s.family, s.bandit, fast, tags, settings, instances, s.description))
    widths = [max(len(r[i]) for r in rows) for i in range(7)]
    return "\n".join(
        "  ".join(f"{c:<{w}}" for c, w in zip(r[:7], widths, strict=True)) + "  " + r[7]
        for r in rows
    )


def model_label(spec: str) -> str:
    """The name a saved model's rows carry in results: ``algo:`` and the file's stem, or
    its folder's name when the file is ``model.zip`` (what ``fedbandit train --out DIR``
    writes), so that two trained models in one table keep distinct labels.

    Examples:
        >>> model_label("ppo:runs/arms_neighbours/model.zip"), model_label("a2c:best.zip")
        ('ppo:arms_neighbours', 'a2c:best')
        >>> model_label("ppo:model.zip")  # no folder to name it by
        'ppo:model'
        >>> model_label("tuned:runs/tuned/neighbours.json")  # a tuned policy's file
        'tuned:neighbours'
    """
    algo, _, path = spec.partition(":")
    file = Path(path)
    stem = file.stem if file.suffix in (".zip", ".json") else file.name
    folder = file.parent.name
    return f"{algo}:{folder if stem == 'model' and folder else stem}"


__all__ = [
    "ENTRY_POINT_GROUP",
    "PolicyOption",
    "PolicySpec",
    "declared_options",
    "deregister",
    "describe_registry",
    "import_plugin",
    "load_entry_point",
    "load_plugins",
    "make",
    "model_label",
    "policy_ids",
    "register",
    "spec",
    "tagged",
]
