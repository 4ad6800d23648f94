"""Byzantine agents: chosen agents send adversarial messages (issue 17).

The wrapper rewrites the *message* of every Byzantine agent before the env routes it
(so it reaches whatever protocol is below: gossip, broadcast, a server); the agent's
arm is its policy's own, and honest agents' messages are untouched. Behaviours:

- ``"constant"``: every entry ``value`` (default ``high``; an extreme such as ``1e6``
  models a crude attacker);
- ``"sign_flip"``: the policy's own message negated;
- ``"random"``: every entry uniform in ``[low, high]`` (the wrapper's own stream);
- ``"boost"``: an adversary that promotes one bad arm: the message is read as a
  header of ``D mod M`` entries, kept as the policy wrote it (the elimination
  algorithms' flag, so the lie keeps the protocol's framing), then blocks of ``M``
  per-arm entries (Gossip_UCB sends ``[counts, means]``, the elimination algorithms
  ``[flag, means]``); the target arm's entry of every block is ``high`` and the others'
  ``low``; the target is ``arm``, by default the arm with the lowest global mean at
  reset (the adversary knows the instance);
- a function ``(message, t, rng) -> message``.

Whatever comes out is clipped to the env's ``message_bounds`` and sent as the wire
carries it, float32: a NaN stays NaN and ``1e300`` arrives as ``inf``. The env lets the
liars' messages through unchecked (``admit_forgers``), so every receiver must survive
them: the registered ones drop what no honest sender can send and count it
(``rejected_messages``); an honest agent's malformed message still raises.

**Regret**: Byzantine agents are not part of the team being scored. Their
``infos["regret"]`` and ``infos["cumulative_regret"]`` are replaced by the honest
agents' mean, so any average over agents (the runners' per-agent regret) is the honest
agents' average, and the group regret is ``N`` times it; every agent's own values are
in ``"own_regret"`` and ``"own_cumulative_regret"``. ``infos[agent]["byzantine"]`` says
which agents lie, ``"corrupted"`` how many messages were rewritten this step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from fedbandit_env.type_aliases import Action, AgentID, FloatArray, Observation, StepResult
from fedbandit_env.wrappers.base import NetworkWrapper, agent_name, require_messages

BEHAVIOURS = ("constant", "sign_flip", "random", "boost")
"""The named adversaries."""


class Byzantine(NetworkWrapper):
    """Replace the messages of ``agents`` by adversarial ones.

    Args:
        env: A parallel env whose actions carry a ``message``.
        agents: The Byzantine agents: names (``"agent_3"``), indices, or an int ``b``
            for the last ``b`` agents. At least one honest agent must remain.
        behaviour: One of :data:`BEHAVIOURS` or a function ``(message, t, rng) ->
            message``.
        low: Lowest value the ``random`` and ``boost`` adversaries send.
        high: Highest value the ``random``, ``boost`` and ``constant`` adversaries send.
        value: The ``constant`` adversary's value (default ``high``).
        arm: The arm ``boost`` promotes (default: the worst arm by global means).

    Examples:
        >>> from fedbandit_env import federated_mab_v0
        >>> base = federated_mab_v0.parallel_env(horizon=3, message_dim=1)
        >>> env = Byzantine(base, ["agent_3"], "constant", value=9.0)
        >>> _ = env.reset(seed=0)
        >>> obs, _, _, _, infos = env.step({a: {"arm": 0, "message": [1.0]} for a in env.agents})
        >>> obs["agent_0"]["messages"][:, 0].tolist(), infos["agent_3"]["byzantine"]
        ([0.0, 1.0, 1.0, 9.0], True)
    """

    vector_form = "fedbandit_env.vector.wrappers.byzantine:VecByzantine"

    STEP_INFO: ClassVar[Mapping[str, Any]] = {
        "corrupted": 0,
        "own_regret": 0.0,
        "own_cumulative_regret": 0.0,
    }

    def with_step_info(self, infos: dict[AgentID, dict[str, Any]]) -> dict[AgentID, dict[str, Any]]:
        """The reset infos with :attr:`STEP_INFO` and each agent's ``byzantine`` flag."""
        return {
            a: {**info, "byzantine": a in self.liars}
            for a, info in super().with_step_info(infos).items()
        }

    def __init__(
        self,
        env: ParallelEnv[AgentID, Observation, Action],
        agents: Sequence[AgentID | int] | int,
        behaviour: str | Callable[[FloatArray, int, np.random.Generator], Any],
        low: float = 0.0,
        high: float = 1.0,
        value: float | None = None,
        arm: int | None = None,
    ) -> None:
        super().__init__(env)
        require_messages(env, "Byzantine")
        names = list(env.possible_agents)
        self.liars = _pick_agents(agents, names)
        self.behaviour = behaviour
        self.low, self.high, self.value = check_attack(behaviour, low, high, value)
        base = env.unwrapped
        space = env.action_space(names[0])
        if not (isinstance(space, spaces.Dict) and "message" in space.spaces):
            raise TypeError(f"Byzantine needs actions with a 'message', got {space!r}")
        self.message_dim = int(np.prod(space["message"].shape or (0,)))
        self.n_arms = int(getattr(base, "n_arms", 0))
        if behaviour == "boost":
            if not hasattr(getattr(base, "problem", None), "gaps"):
                raise ValueError("behaviour 'boost' needs a multi-armed env (per-arm means)")
            if not self.n_arms or self.message_dim < self.n_arms:
                raise ValueError(
                    f"behaviour 'boost' needs a block of M = {self.n_arms} per-arm entries; "
                    f"the message has {self.message_dim}"
                )
            if arm is not None and not 0 <= int(arm) < self.n_arms:
                raise ValueError(f"arm must lie in [0, {self.n_arms}), got {arm!r}")
        self.arm = arm
        self._target = 0
        lo, hi = base.message_bounds
        self._bounds = (float(lo), float(hi))
        self._honest = [a for a in names if a not in self.liars]
        self._t = 0
        admit = getattr(base, "admit_forgers", None)
        if admit is not None:  # the wire carries a lie whatever its value (NaN, inf)
            admit(self.liars)

    def restart(self, obs: dict[AgentID, Observation]) -> dict[AgentID, Observation]:
        """Step count 0; ``boost``'s target picked on this episode's instance."""
        self._t = 0
        if self.arm is not None:
            self._target = int(self.arm)
        elif self.behaviour == "boost":
            self._target = int(np.argmax(self.env.unwrapped.problem.gaps))
        return obs

    def lie(self, message: FloatArray) -> FloatArray:
        """The adversary's message in place of ``message`` (before clipping)."""
        b = self.behaviour
        if callable(b):
            out = np.asarray(b(message.copy(), self._t, self._rng), dtype=np.float64)
            if out.shape != message.shape:
                raise ValueError(f"the behaviour returned shape {out.shape}, need {message.shape}")
            return out
        if b == "constant":
            return np.full_like(message, self.value)
        if b == "sign_flip":
            return -message
        if b == "random":
            return self._rng.uniform(self.low, self.high, message.shape)
        head = message.size % self.n_arms  # boost
        out = np.full(message.shape, self.low)
        out[:head] = message[:head]
        out[head + self._target :: self.n_arms] = self.high
        return out

    def step(self, actions: dict[AgentID, Action]) -> StepResult:
        """Rewrite the liars' messages, step, and score the honest agents only."""
        self._t += 1
        actions = dict(actions)
        corrupted = 0
        for agent in self.liars:
            if agent not in actions:
                continue
            action = actions[agent]
            if not isinstance(action, dict) or "message" not in action:
                raise TypeError(f"{agent}'s action has no 'message' to corrupt: {action!r}")
            message = np.asarray(action["message"], dtype=np.float64).reshape(-1)
            with np.errstate(over="ignore", invalid="ignore"):  # float32 overflows to inf
                lie = np.clip(self.lie(message), *self._bounds).astype(np.float32)
            actions[agent] = {**action, "message": lie}
            corrupted += 1
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        honest = [a for a in self._honest if a in infos]
        mean = {
            key: float(np.mean([infos[a][key] for a in honest]))
            for key in ("regret", "cumulative_regret")
        }
        for agent in infos:
            info = {**infos[agent], "byzantine": agent in self.liars, "corrupted": corrupted}
            info["own_regret"] = info["regret"]
            info["own_cumulative_regret"] = info["cumulative_regret"]
            if agent in self.liars:
                info.update(mean)
            infos[agent] = info
        return obs, rewards, terms, truncs, infos

    def __repr__(self) -> str:
        b = getattr(self.behaviour, "__name__", self.behaviour)
        return f"Byzantine({self.env!r}, agents={self.liars}, behaviour={b!r})"


def check_attack(
    behaviour: Any, low: float, high: float, value: float | None
) -> tuple[float, float, float]:
    """An attack's checked ``(low, high, value)`` (``value`` defaults to ``high``), for
    :class:`Byzantine` and its vector form.

    Raises:
        ValueError: For an unknown behaviour or a range that is not finite and ordered.

    Examples:
        >>> check_attack("constant", 0.0, 1.0, None)
        (0.0, 1.0, 1.0)
    """
    if not callable(behaviour) and behaviour not in BEHAVIOURS:
        raise ValueError(
            f"behaviour must be one of {list(BEHAVIOURS)} or a function, got {behaviour!r}"
        )
    if not (np.isfinite(low) and np.isfinite(high) and low <= high):
        raise ValueError(f"low and high must be finite with low <= high, got {low}, {high}")
    return float(low), float(high), float(high) if value is None else float(value)


def _pick_agents(agents: Sequence[AgentID | int] | int, names: list[AgentID]) -> list[AgentID]:
    """The Byzantine agents' names, checked."""
    n = len(names)
    if isinstance(agents, bool):
        raise TypeError(f"agents must be names, indices or a count, got {agents!r}")
    if isinstance(agents, int | np.integer):
        if not 1 <= int(agents) < n:
            raise ValueError(f"a count of Byzantine agents must lie in [1, {n - 1}], got {agents}")
        return names[n - int(agents) :]
    out: list[AgentID] = []
    for a in agents:
        name = agent_name(a, names)
        if name in out:
            raise ValueError(f"agent {name!r} is listed twice in agents")
        out.append(name)
    if not 1 <= len(out) < n:
        raise ValueError(f"agents must name between 1 and {n - 1} agents, got {len(out)}")
    return sorted(out, key=names.index)


__all__ = ["BEHAVIOURS", "Byzantine", "check_attack"]
