"""What a learned policy observes, written down next to the saved model.

A model only works on observations shaped like those it was trained on. A
:class:`LearnerStack` names the wrapper stack (privacy, own statistics, messages) so
that training, ``fedbandit bench --policies ppo:model.zip`` and any later evaluation
build the same env around a scenario; it is saved as ``<model>.fedbandit.json``.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from fedbandit_env.files import write_text_atomic
from fedbandit_env.policies import Requirements
from fedbandit_env.rl.common import PRIVILEGED_REWARDS, REWARD_ALIASES
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.type_aliases import AgentID, Observation
from fedbandit_env.wrappers.local_statistics import LocalStatistics

SB3_ALGOS = ("ppo", "a2c", "dqn", "recurrent_ppo")
"""Algorithms of saved models (``recurrent_ppo``: sb3-contrib's ``RecurrentPPO``)."""


@dataclass(frozen=True)
class LearnerStack:
    """The env a learner sees, built from any scenario.

    Attributes:
        epsilon: Rewards only through ``PrivateRewards(epsilon)`` (which adds private
            ``counts`` and ``means``); ``None``: raw rewards plus ``LocalStatistics``.
        share_means: Each agent sends its (private) means as its message, so neighbours'
            means arrive in ``messages`` through the scenario's protocol.
        setting: The information setting the model was trained in (``None``: none
            named); evaluating it in another fails with a clear message.
        reward: What it was trained on: ``"own"`` (its own reward, what the agent
            observes), ``"team_value"`` (honest: the team's estimate of the pulled
            arm's global mean from the agent's own means and the ones it hears),
            ``"neg_regret"`` or ``"team"`` (privileged: the agent's or the team's regret
            against the global means).
        distribution: The instances it was trained on (a distribution's name, or
            ``"fixed"``).
        scale: Observations scaled onto ``[-1, 1]`` by their bounds (``AgentVecEnv``
            and ``ModelTeam`` with ``scale=True``).
        statistics: Add the agent's own counts and means (``LocalStatistics``) to raw
            rewards; ``False``: the raw observation only (a recurrent policy keeps its
            own memory). Sharing raw means needs them.
        memory: Add the latest message heard from each neighbour (``HeldMessages``):
            what random-edge gossip needs, where one neighbour speaks a step.
        horizon: The episode length it was trained at (0: not recorded, models saved
            before it was); the longest, when trained over sampled lengths.
        min_horizon: The shortest sampled episode length (0: every episode ``horizon``
            long; :class:`~fedbandit_env.rl.AgentVecEnv`'s ``episode_lengths``).
        horizon_free: Observations that do not depend on the horizon
            (:class:`~fedbandit_env.wrappers.HorizonFree`: ``log(1 + t)``, pull shares
            ``n / t`` and UCB1's width ``sqrt(log(1 + t) / (1 + n))`` for the step and
            counts), so the model reads the same numbers at any ``T``.
        share_counts: The message carries the agent's pull shares ``n / t`` after its
            means (``2 M`` numbers: what Gossip_UCB and cooperative UCB send, counts and
            means, with counts as shares so that the message does not grow with ``T``);
            needs ``share_means``.
        posterior: The learner reads the team posterior
            (:class:`~fedbandit_env.wrappers.TeamPosterior`): the wrapper sends the
            agent's counts and sums (the ``2 M`` numbers ``coop_ts`` sends), holds every
            sender's newest pair, and observes per arm the posterior of the team average
            and the agent's own statistics, horizon-free; the learner chooses arms only.
            It replaces the statistics, message and memory options above.

    Examples:
        >>> stack = LearnerStack(epsilon=1.0, share_means=True)
        >>> env = stack.make_env(Scenario(n_agents=3, n_arms=2, horizon=5, protocol="broadcast"))
        >>> sorted(env.observation_space("agent_0").spaces)
        ['arm', 'counts', 'mask', 'messages', 'private_means', 'reward', 'step']
    """

    epsilon: float | None = None
    share_means: bool = False
    setting: str | None = None
    reward: str = "own"
    distribution: str = ""
    scale: bool = False
    statistics: bool = True
    memory: bool = False
    horizon: int = 0
    min_horizon: int = 0
    horizon_free: bool = False
    share_counts: bool = False
    posterior: bool = False

    def __post_init__(self) -> None:
        if self.reward in REWARD_ALIASES:  # a stack saved under the former name
            object.__setattr__(self, "reward", REWARD_ALIASES[self.reward])
        if self.posterior and (self.share_means or self.memory or self.horizon_free):
            raise ValueError(
                "posterior=True sends the agent's counts and sums and keeps what it hears "
                "itself: it replaces share_means, memory and horizon_free"
            )
        if self.posterior and self.reward == "team_value":
            raise ValueError("the team_value reward reads means the posterior stack hides")
        if self.share_counts and not self.share_means:
            raise ValueError("share_counts adds pull shares to the means a learner sends")
        if self.horizon_free and not self.statistics and self.epsilon is None:
            raise ValueError("horizon_free replaces the statistics' counts: statistics=True")
        if not self.statistics and self.share_means and self.epsilon is None:
            raise ValueError("share_means without privacy needs statistics=True (the means)")
        if not self.statistics and self.reward == "team_value" and self.epsilon is None:
            raise ValueError("the team_value reward needs statistics=True (the means)")

    @classmethod
    def for_setting(cls, setting: str, epsilon: float | None = None, **kw: Any) -> LearnerStack:
        """The stack of a learner in an information setting: private rewards in a
        ``+private`` one, its means as its message where the setting carries messages,
        and each neighbour's latest message kept under random-edge gossip.

        Raises:
            ValueError: For a round-based setting (``server``, ``flooding``,
                ``hybrid``), whose messages follow a protocol a learner does not speak.

        Examples:
            >>> LearnerStack.for_setting("gossip+private", 1.0).share_means
            True
        """
        from fedbandit_env.settings import get_setting

        info = get_setting(setting)
        if info.protocol not in (None, "random_edge_gossip", "broadcast"):
            raise ValueError(
                f"learners train in local, gossip or neighbours settings (+private), "
                f"not {setting!r}: its rounds protocol expects a send flag and payload"
            )
        eps = epsilon if info.private else None
        if kw.get("posterior"):
            if info.protocol is None:
                raise ValueError(
                    f"the posterior learner shares counts and sums: {setting!r} carries no messages"
                )
            return cls(eps, False, setting=setting, scale=False, **kw)
        kw.setdefault("memory", info.protocol == "random_edge_gossip")
        if info.protocol is None:
            kw["share_counts"] = False  # nothing is sent in a setting without messages
        return cls(eps, info.protocol is not None, setting=setting, scale=True, **kw)

    @property
    def privileged(self) -> bool:
        """Trained on a signal the agents cannot observe (``neg_regret``, ``team``)."""
        return self.reward in PRIVILEGED_REWARDS

    def requirements(self, n_arms: int) -> Requirements:
        """Messages of ``n_arms`` entries when sharing means (``2 n_arms`` with the pull
        shares, or the posterior's counts and sums); privacy when ``epsilon``."""
        width = n_arms * (2 if self.share_counts else 1) if self.share_means else 0
        if self.posterior:
            width = 2 * n_arms
        return Requirements(message_dim=width, epsilon=self.epsilon)

    @property
    def sends(self) -> str:
        """What the learner's message carries, in words (for result tables).

        Examples:
            >>> LearnerStack(share_means=True, share_counts=True).sends
            'means + pull shares'
        """
        if self.posterior:
            return "counts + private sums" if self.epsilon is not None else "counts + sums"
        if not self.share_means:
            return "nothing"
        means = "private means" if self.epsilon is not None else "means"
        return means + (" + pull shares" if self.share_counts else "")

    def _check_setting(self, scenario: Scenario) -> None:
        if self.setting is not None and scenario.setting not in (None, self.setting):
            raise ValueError(
                f"the model was trained in the {self.setting!r} setting; it cannot be "
                f"evaluated in {scenario.setting!r}"
            )

    def make_env(self, scenario: Scenario) -> ParallelEnv[Any, Any, Any]:
        """The scenario's env under this stack (through the scenario's setting, if any).

        Raises:
            ValueError: If the scenario names a setting other than the stack's.
        """
        self._check_setting(scenario)
        env = scenario.make_env(self.requirements(scenario.n_arms))
        if self.posterior:
            from fedbandit_env.wrappers.team_posterior import TeamPosterior

            return TeamPosterior(env)
        if self.epsilon is None and self.statistics:
            env = LocalStatistics(env)
        if self.memory and self.share_means:
            from fedbandit_env.wrappers.held_messages import HeldMessages

            env = HeldMessages(env)
        if self.horizon_free:
            from fedbandit_env.wrappers.horizon_free import HorizonFree

            env = HorizonFree(env)
        return env

    def make_vec(self, scenario: Scenario, num_envs: int, device: Any = None) -> Any:
        """The vector form of :meth:`make_env`: ``num_envs`` envs of ``scenario`` under
        this stack (:func:`~fedbandit_env.vector.make_vec`, then the vector forms of
        ``LocalStatistics``, ``HeldMessages`` and ``HorizonFree`` in the same order, or
        of ``TeamPosterior``); env ``b`` of ``reset(seed=s)`` replays :meth:`make_env`
        reset with ``s + b``. ``device``: where the arrays live (``None``: NumPy, the
        replay reference; a torch device: :mod:`fedbandit_env.backend`).

        Raises:
            ValueError: If the scenario names a setting other than the stack's, or its
                stack has a layer without a vector form.

        Examples:
            >>> stack = LearnerStack.for_setting("gossip")
            >>> venv = stack.make_vec(Scenario(n_agents=3, n_arms=2, horizon=5,
            ...                                setting="gossip"), 4)
            >>> venv.reset(seed=0)[0]["held"].shape
            (4, 3, 3, 2)
        """
        from fedbandit_env.vector import make_vec
        from fedbandit_env.wrappers.base import vector_form
        from fedbandit_env.wrappers.held_messages import HeldMessages
        from fedbandit_env.wrappers.horizon_free import HorizonFree
        from fedbandit_env.wrappers.team_posterior import TeamPosterior

        self._check_setting(scenario)
        venv = make_vec(scenario, num_envs, self.requirements(scenario.n_arms), device=device)
        if self.posterior:
            return vector_form(TeamPosterior)(venv)
        if self.epsilon is None and self.statistics:
            venv = vector_form(LocalStatistics)(venv)
        if self.memory and self.share_means:
            venv = vector_form(HeldMessages)(venv)
        if self.horizon_free:
            venv = vector_form(HorizonFree)(venv)
        return venv

    def vector_messages(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """:meth:`message_fn` of every agent of a vector step: ``(B, N, D)`` float32,
        the same numbers agent by agent.

        Examples:
            >>> stack = LearnerStack(share_means=True, share_counts=True)
            >>> obs = {"means": np.array([[[0.5, 1.0]]]), "counts": np.array([[[1.0, 3.0]]]),
            ...        "step": np.array([[[4.0]]])}
            >>> stack.vector_messages(obs).tolist()
            [[[0.5, 1.0, 0.25, 0.75]]]
        """
        from fedbandit_env.backend import array_backend

        key = "private_means" if "private_means" in obs else "means"
        be = array_backend(obs[key])
        xp = be.xp
        means = xp.astype(be.asarray(obs[key]), be.float32)
        if not self.share_counts:
            return means
        if "shares" in obs:
            shares = xp.astype(obs["shares"], be.float32)
        else:
            from fedbandit_env.wrappers.horizon_free import horizon_free_features

            t = round(float(obs["step"][0, 0, 0]))
            shares = horizon_free_features(t, obs["counts"])[1]
        return xp.concat([means, shares], axis=-1)

    def message_fn(self, agent: AgentID, observation: Observation) -> np.ndarray:
        """The message a learner sends: its means (private ones under privacy), then,
        with ``share_counts``, its pull shares ``n / t`` (0 before the first step).

        Examples:
            >>> LearnerStack(share_means=True).message_fn("agent_0", {"means": [0.5, 1.0]})
            array([0.5, 1. ], dtype=float32)
            >>> stack = LearnerStack(share_means=True, share_counts=True)
            >>> stack.message_fn("a", {"means": [0.5, 1.0], "counts": [1, 3], "step": [4]})
            array([0.5 , 1.  , 0.25, 0.75], dtype=float32)
        """
        key = "private_means" if "private_means" in observation else "means"
        means = np.asarray(observation[key], dtype=np.float32)
        if not self.share_counts:
            return means
        return np.concatenate([means, pull_shares(observation)])

    def untrained_conditions(self, scenario: Scenario) -> list[str]:
        """What in ``scenario`` the model was not trained for: another horizon (its
        count and step features then take values it never saw), other instances.

        Examples:
            >>> stack = LearnerStack(horizon=200, distribution="biased(N=3,M=3)")
            >>> stack.untrained_conditions(Scenario(n_agents=3, n_arms=3, horizon=200,
            ...                                     instance="biased"))
            []
            >>> stack.untrained_conditions(Scenario(n_agents=3, n_arms=3, horizon=200,
            ...                                     instance="conflicting"))
            ['the fixed instance conflicting(N=3,M=3) (trained on biased(N=3,M=3))']
            >>> for what in stack.untrained_conditions(Scenario(
            ...     n_agents=3, n_arms=3, horizon=2000, instances="held_out", instance="conflicting"
            ... )):
            ...     print(what)
            horizon T=2000 (trained at T=200)
            instances conflicting(N=3,M=3) (trained on biased(N=3,M=3))
        """
        out = []
        low = self.min_horizon or self.horizon
        if self.horizon and not low <= scenario.horizon <= self.horizon:
            trained = f"T={self.horizon}" if low == self.horizon else f"T={low}..{self.horizon}"
            free = ", horizon-free features" if self.horizon_free else ""
            out.append(f"horizon T={scenario.horizon} (trained at {trained}{free})")
        # a fixed instance is one instance of its kind: covered when the model was trained
        # on that kind and shape, flagged when on another (silent at d3a7325)
        if not self.distribution:
            return out
        try:
            here = scenario.distribution_name
        except ValueError:  # a fixed instance whose kind cannot draw at this shape
            here = scenario.instance
        if here != self.distribution:
            fixed = "the fixed instance " if scenario.instances == "fixed" else "instances "
            out.append(f"{fixed}{here} (trained on {self.distribution})")
        return out

    def save(self, model_path: str | Path) -> Path:
        """Write ``<model>.fedbandit.json`` beside ``model_path``."""
        path = sidecar(model_path)
        return write_text_atomic(path, json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, model_path: str | Path) -> LearnerStack:
        """Read the stack saved beside a model (default stack if there is none)."""
        path = sidecar(model_path)
        if not path.exists():
            return cls()
        fields = json.loads(path.read_text())
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in fields.items() if k in known})


def pull_shares(observation: Observation) -> np.ndarray:
    """The agent's pull shares ``n / t`` (float32): ``shares`` under
    :class:`~fedbandit_env.wrappers.HorizonFree`, else its ``counts`` over ``step``.

    Examples:
        >>> pull_shares({"counts": [0, 2], "step": [0]}).tolist()
        [0.0, 0.0]
    """
    if "shares" in observation:
        return np.asarray(observation["shares"], dtype=np.float32)
    from fedbandit_env.wrappers.base import step_of
    from fedbandit_env.wrappers.horizon_free import horizon_free_features

    t = step_of(observation)
    return horizon_free_features(t, np.asarray(observation["counts"]))[1]


def sidecar(model_path: str | Path) -> Path:
    """``model.zip`` -> ``model.fedbandit.json``.

    Examples:
        >>> sidecar("runs/ppo.zip").name
        'ppo.fedbandit.json'
    """
    p = Path(model_path)
    stem = p.name[: -len(".zip")] if p.name.endswith(".zip") else p.name
    return p.with_name(stem + ".fedbandit.json")


def algorithm(algo: str) -> Any:
    """The stable-baselines3 (or sb3-contrib) class of ``algo``.

    Examples:
        >>> algorithm("recurrent_ppo").__name__
        'RecurrentPPO'
    """
    if algo == "recurrent_ppo":
        from sb3_contrib import RecurrentPPO

        return RecurrentPPO
    import stable_baselines3 as sb3

    if algo not in SB3_ALGOS:
        raise ValueError(f"algo must be one of {SB3_ALGOS}, got {algo!r}")
    return {"ppo": sb3.PPO, "a2c": sb3.A2C, "dqn": sb3.DQN}[algo]


def load_model(spec: str) -> tuple[str, Any, LearnerStack]:
    """``"ppo:path/to/model.zip"`` -> ``(label, model, stack)`` (stable-baselines3); the
    label is :func:`~fedbandit_env.registry.model_label`'s.

    Raises:
        ValueError: For an unknown algorithm or a missing file.
    """
    algo, _, path = spec.partition(":")
    if algo not in SB3_ALGOS or not path:
        raise ValueError(f"a saved model is named <{'|'.join(SB3_ALGOS)}>:<path>, got {spec!r}")
    file = Path(path)
    if file.is_dir():  # what fedbandit train --out DIR writes: DIR/model.zip
        if not (file / "model.zip").is_file():
            raise ValueError(f"no saved model in the folder {path!r} (no model.zip in it)")
        file = file / "model.zip"
        path, spec = str(file), f"{algo}:{file}"
    if not file.exists() and not file.with_suffix(".zip").exists():
        raise ValueError(f"no saved model at {path!r}")
    from fedbandit_env.registry import model_label

    cls: Any = algorithm(algo)
    try:
        model = cls.load(path, device="cpu")
    except (ValueError, KeyError, OSError, zipfile.BadZipFile, AssertionError) as err:
        # SB3 asserts on a zip without its "data" entry
        raise ValueError(f"{path!r} is not a saved {algo} model ({err})") from err
    return model_label(spec), model, LearnerStack.load(path)
