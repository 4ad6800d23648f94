"""Every communication wrapper composes with every other, in any order (issue 17)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fedbandit_env import federated_mab_v0
from fedbandit_env.testing import check_determinism, check_parallel_env
from fedbandit_env.wrappers import (
    AgentCrash,
    Byzantine,
    GilbertElliottLoss,
    Gossip,
    LinkFailures,
    MessageDelay,
    MessageLoss,
    PrivateRewards,
)

Wrap = Callable[[Any], Any]

WRAPPERS: dict[str, Wrap] = {
    "gossip": lambda env: Gossip(env, "random_matching", public_dim=1),
    "loss": lambda env: MessageLoss(env, 0.3),
    "delay": lambda env: MessageDelay(env, 1, 3),
    "bursty": lambda env: GilbertElliottLoss(env, 0.2, 0.3),
    "links": lambda env: LinkFailures(env, 0.2, 0.4),
    "crash": lambda env: AgentCrash(env, 0.1, 0.3),
    "byzantine": lambda env: Byzantine(env, 1, "random", low=-1.0, high=1.0),
}


def _stack(names: tuple[str, ...], private: int | None = None) -> Callable[[], Any]:
    """A factory of the base env wrapped by ``names`` bottom-up; ``PrivateRewards``
    inserted at position ``private`` when given."""

    def make() -> Any:
        env = federated_mab_v0.parallel_env(
            n_agents=5, n_arms=3, horizon=25, network="ring", message_dim=2, seed=0
        )
        for k, name in enumerate(names):
            if k == private:
                env = PrivateRewards(env, 1.0)
            env = WRAPPERS[name](env)
        if private is not None and private >= len(names):
            env = PrivateRewards(env, 1.0)
        return env

    return make


PAIRS = list(itertools.permutations(WRAPPERS, 2))


@pytest.mark.parametrize("names", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_every_ordered_pair_passes_api_and_determinism(names: tuple[str, ...]) -> None:
    check_parallel_env(_stack(names), num_cycles=25)
    check_determinism(_stack(names), seed=3)


_rng = np.random.default_rng(17)
EVERY = [tuple(_rng.permutation(list(WRAPPERS)).tolist()) for _ in range(4)]
EVERY += [tuple(WRAPPERS), tuple(reversed(WRAPPERS))]


@pytest.mark.parametrize("k", range(len(EVERY)))
def test_all_of_them_with_privacy_anywhere_pass_api_and_determinism(k: int) -> None:
    names = EVERY[k]
    make = _stack(names, private=k % (len(names) + 1))
    check_parallel_env(make, num_cycles=25)
    check_determinism(make, seed=k)


def test_all_of_them_import_from_one_place_and_report_in_infos() -> None:
    env = _stack(tuple(WRAPPERS))()
    env.reset(seed=0)
    info: dict[str, Any] = {}
    while env.agents:
        acts = {a: {"arm": 0, "message": np.ones(2, np.float32)} for a in env.agents}
        info = env.step(acts)[4]["agent_0"]
    for key in ("gossip_calls", "messages_lost", "messages_in_flight", "links_down", "links_bad"):
        assert key in info, key
    for key in ("crashed", "byzantine", "corrupted"):
        assert key in info, key
    assert np.isfinite(info["cumulative_regret"]) and np.isfinite(info["cumulative_comm_cost"])


def test_every_fault_field_is_a_scenario_field_with_the_tables_default() -> None:
    """The fault table is what the CLI, the checks and the stack plan read; the
    scenario's flat fields (a sweep grids over them) must say the same."""
    import dataclasses

    from fedbandit_env.scenario.faults import FAULT_DEFAULTS
    from fedbandit_env.scenario.scenario import Scenario

    fields = {f.name: f.default for f in dataclasses.fields(Scenario)}
    assert {k: fields.get(k, "missing") for k in FAULT_DEFAULTS} == FAULT_DEFAULTS


def test_the_command_line_offers_every_fault_field_from_the_table() -> None:
    from fedbandit_env.cli import build_parser
    from fedbandit_env.scenario.faults import FAULTS

    for command in ("bench", "sweep"):
        parser = build_parser()
        args = parser.parse_args([command, "--loss", "0.25", "--attack", "sign_flip"])
        for fault in FAULTS:
            for x in fault.fields:
                assert hasattr(args, x.name), (command, x.name)
        assert (args.loss, args.attack, args.delay) == (0.25, "sign_flip", 0)
