"""The vector forms of the learner's wrappers against the PettingZoo wrappers."""

from __future__ import annotations

import numpy as np
import pytest

from fedbandit_env.policies import Requirements
from fedbandit_env.scenario.scenario import Scenario
from fedbandit_env.testing import check_vector_replay
from fedbandit_env.vector import make_vec
from fedbandit_env.vector.wrappers import VecLocalStatistics, VecPrivateRewards
from fedbandit_env.wrappers import LocalStatistics


@pytest.mark.parametrize("setting", ["local", "neighbours", "gossip"])
def test_local_statistics_replays(setting: str) -> None:
    eps = 1.0 if setting.endswith("private") else None
    scenario = Scenario(n_agents=5, n_arms=3, horizon=30, setting=setting, epsilon=eps,
                        noise="gaussian", clip=(-3.0, 3.0))  # fmt: skip
    needs = None if setting == "local" else Requirements(message_dim=3)
    check_vector_replay(scenario, needs, num_envs=3, wrap_env=LocalStatistics,
                        wrap_vec=VecLocalStatistics)  # fmt: skip


@pytest.mark.parametrize("estimator", ["dyadic", "honaker"])
def test_private_rewards_replay_a_long_episode(estimator: str) -> None:
    """More steps than a few tree levels: every level's blocks close and are noised."""
    scenario = Scenario(n_agents=4, n_arms=3, horizon=300, setting="local+private",
                        epsilon=0.5, estimator=estimator)  # fmt: skip
    check_vector_replay(scenario, num_envs=2, episodes=2)


def test_power_half_the_noise_is_caught() -> None:
    """A vector tree at half the calibrated scale releases other bits: the replay fails."""
    scenario = Scenario(n_agents=3, n_arms=2, horizon=20, setting="local+private", epsilon=1.0)

    def weakened(venv):  # type: ignore[no-untyped-def]
        inner = venv.env
        twin = VecPrivateRewards(inner, 1.0)
        twin.scale = venv.scale / 2
        return twin

    with pytest.raises(AssertionError, match="reward"):
        check_vector_replay(scenario, num_envs=2, wrap_vec=weakened, wrap_env=lambda e: e)


def test_secure_noise_is_fresh_and_differs_from_the_seeded_stream() -> None:
    def rewards(noise: str) -> np.ndarray:
        scenario = Scenario(n_agents=3, n_arms=2, horizon=8, setting="local+private",
                            epsilon=1.0, privacy_noise=noise)  # fmt: skip
        venv = make_vec(scenario, 4)
        venv.reset(seed=0)
        return np.stack([venv.step(np.zeros((4, 3), int))[1] for _ in range(8)])

    seeded, again = rewards("seeded"), rewards("seeded")
    one, two = rewards("secure"), rewards("secure")
    assert np.array_equal(seeded, again)
    assert not np.array_equal(one, two)
    assert not np.array_equal(one, seeded)


def test_raw_statistics_below_privacy_are_refused() -> None:
    scenario = Scenario(n_agents=3, n_arms=2, horizon=8, setting="local")
    with pytest.raises(ValueError, match="means"):
        VecPrivateRewards(VecLocalStatistics(make_vec(scenario, 2)), 1.0)


def test_local_statistics_reset_on_autoreset() -> None:
    scenario = Scenario(n_agents=3, n_arms=2, horizon=2, setting="local")
    venv = VecLocalStatistics(make_vec(scenario, 2))
    venv.reset(seed=0)
    arms = np.ones((2, 3), int)
    venv.step(arms)
    assert venv.step(arms)[0]["counts"][0, 0, 1] == 2
    obs = venv.step(arms)[0]  # the autoreset
    assert not obs["counts"].any() and (obs["step"] == 0).all()
    assert venv.step(arms)[0]["counts"][0, 0, 1] == 1


@pytest.mark.parametrize(
    ("setting", "graph"),
    [("gossip", "ring"), ("neighbours", "ring"), ("neighbours", "complete"),
     ("gossip+private", "ring")],
)  # fmt: skip
def test_learner_stack_replays(setting: str, graph: str) -> None:
    """The learner's whole stack (statistics or privacy, held messages, horizon-free
    features) in vector form against the PettingZoo stack (on the complete graph most
    of a receiver's slots arrive each step, on the ring few: ``hold_arrived``'s two
    ways of writing a receiver's row)."""
    from fedbandit_env.vector.wrappers import VecHeldMessages, VecHorizonFree
    from fedbandit_env.wrappers import HeldMessages, HorizonFree

    private = setting.endswith("private")
    scenario = Scenario(n_agents=5, n_arms=3, horizon=40, setting=setting, graph=graph,
                        epsilon=1.0 if private else None)  # fmt: skip

    def wrap_env(env):  # type: ignore[no-untyped-def]
        return HorizonFree(HeldMessages(env if private else LocalStatistics(env)))

    def wrap_vec(venv):  # type: ignore[no-untyped-def]
        return VecHorizonFree(VecHeldMessages(venv if private else VecLocalStatistics(venv)))

    check_vector_replay(scenario, Requirements(message_dim=3), num_envs=3,
                        wrap_env=wrap_env, wrap_vec=wrap_vec)  # fmt: skip


def _classes(package: str, base: type) -> set[type]:
    """Every subclass of ``base`` defined in the modules of ``package``."""
    import importlib
    import inspect
    import pkgutil

    root = importlib.import_module(package)
    found: set[type] = set()
    for info in pkgutil.iter_modules(root.__path__, f"{package}."):
        module = importlib.import_module(info.name)
        for _, c in inspect.getmembers(module, inspect.isclass):
            if issubclass(c, base) and c is not base and c.__module__ == info.name:
                found.add(c)
    return found


def _unnamed(vector_classes: set[type], wrappers: set[type]) -> list[str]:
    """The vector wrappers not named by exactly one wrapper's ``vector_form``."""
    from fedbandit_env.wrappers.base import vector_form

    named = [vector_form(w) for w in wrappers]
    return sorted(v.__name__ for v in vector_classes if named.count(v) != 1)


def test_every_vector_wrapper_is_named_once_by_its_wrapper() -> None:
    """Issue 62 item 6: a wrapper names its vector form once (``vector_form``), and the
    scenario's plan, its faults, the learner's stack and the batched loop's check read
    it there (once ``rl/batched.py``'s ``VECTOR_LAYERS`` was a fifth list that nothing
    prompted: a vector form missing from it silently sent saved models down the slow
    path). A new vector wrapper that no wrapper names fails here."""
    from fedbandit_env.vector.wrappers.base import VecWrapper
    from fedbandit_env.wrappers.base import ParallelWrapper, vector_form

    vector_classes = _classes("fedbandit_env.vector.wrappers", VecWrapper)
    wrappers = _classes("fedbandit_env.wrappers", ParallelWrapper)
    assert len(vector_classes) >= 11 and _unnamed(vector_classes, wrappers) == []
    for wrapper in wrappers:
        form = vector_form(wrapper)
        assert form is None or issubclass(form, VecWrapper), wrapper

    class VecNew(VecWrapper):  # a new vector wrapper, named by no wrapper
        pass

    assert _unnamed({*vector_classes, VecNew}, wrappers) == ["VecNew"]


def test_the_batched_loop_reads_the_vector_forms() -> None:
    """A wrapper without a vector form (its own ``vector_form``, not its parent's) is
    named by the batched loop's check; one with a form passes it."""
    from fedbandit_env.rl.batched import unsupported
    from fedbandit_env.wrappers import GilbertElliottLoss, MessageLoss

    scenario = Scenario(n_agents=3, n_arms=2, horizon=5, setting="neighbours")
    env = scenario.make_env(Requirements(message_dim=2))
    assert unsupported(MessageLoss(env, 0.1)) is None
    assert unsupported(GilbertElliottLoss(env, 0.1, 0.1)) == "the wrapper GilbertElliottLoss"
