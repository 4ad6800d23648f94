"""The learned references: a trained posterior net, exported to NumPy, acts as the saved
model acts (greedy: the same arms on the same trials), plays the same trials on both
views of the env, and refuses what it is not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from baselines.learned import LearnedPolicy, export_model, learned, model_record, shipped
from fedbandit_env.registry import PolicySpec
from fedbandit_env.rl import LearnerStack
from fedbandit_env.rl.posterior_net import load_weights, posterior_scores
from fedbandit_env.rl.train import train_model
from fedbandit_env.runner.evaluate import evaluate
from fedbandit_env.scenario.scenario import Scenario

SMALL = {"n_agents": 4, "n_arms": 3, "horizon": 30, "instance": "biased"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny posterior net for each kind of setting, trained and exported."""
    out = {}
    for setting, eps in (("neighbours", None), ("gossip+private", 1.0)):
        folder = tmp_path_factory.mktemp(setting.replace("+", "_"))
        s = Scenario(setting=setting, epsilon=eps, **SMALL)
        stack = LearnerStack.for_setting(setting, eps, posterior=True, reward="team")
        path = train_model("ppo", s, stack, 4000, folder, copies=4, net="posterior",
                           batched=True)  # fmt: skip
        out[setting] = export_model(path, "learned_test", {"setting": setting}, folder)
    return out


def _policy(path: Path, **kw: object) -> PolicySpec:
    weights = load_weights(path)
    record = __import__("json").loads(path.with_suffix(".json").read_text())
    eps = record["stack"]["epsilon"]
    return PolicySpec("learned_test", lambda: LearnedPolicy(weights, epsilon=eps, **kw))


@pytest.mark.parametrize("setting", ["neighbours", "gossip+private"])
def test_it_sees_and_scores_what_the_saved_model_does(
    exported: dict[str, Path], setting: str
) -> None:
    """Stepped with the same arms, the NumPy policy's own team posterior (kept from the
    raw observations) is TeamPosterior's to the bit, and its score distributions are the
    torch model's (to float32's rounding)."""
    import torch as th

    from fedbandit_env.rl.stack import load_model
    from fedbandit_env.vector import make_vec
    from fedbandit_env.vector.policy import VectorSpec

    eps = 1.0 if setting.endswith("private") else None
    s = Scenario(setting=setting, epsilon=eps, instances="held_out", **SMALL)
    _, model, stack = load_model(f"ppo:{exported[setting].parent / 'model.zip'}")
    learner = stack.make_vec(s, 2)
    raw = make_vec(s, 2, stack.requirements(3))
    policy = _policy(exported[setting]).make().policy
    policy.reset(VectorSpec.from_env(s.make_env(stack.requirements(3)), 2),
                 [np.random.default_rng(b) for b in range(2)])  # fmt: skip
    obs, _ = learner.reset(seed=9)
    raw_obs, _ = raw.reset(seed=9)
    for t in range(SMALL["horizon"]):
        _, messages = policy.act(raw_obs)
        np.testing.assert_array_equal(policy.state.features(t), obs["posterior"])
        one_hot = np.eye(3, dtype=np.float32)[obs["arm"]]
        flat = np.concatenate([one_hot, obs["posterior"].reshape(2, 4, -1), obs["step"]], axis=2)
        with th.no_grad():
            mean, sd, _ = model.policy.scores_and_values(th.as_tensor(flat.reshape(8, -1)))
        ours = posterior_scores(policy.weights, obs["posterior"])
        np.testing.assert_allclose(ours[0].reshape(8, 3), mean.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ours[1].reshape(8, 3), sd.numpy(), rtol=1e-5, atol=1e-6)
        arms = np.asarray(mean.argmax(dim=1)).reshape(2, 4)
        obs, *_ = learner.step(arms)
        raw_obs, *_ = raw.step(arms, messages)


@pytest.mark.parametrize("setting", ["neighbours", "gossip+private"])
def test_both_paths_give_the_same_trials(exported: dict[str, Path], setting: str) -> None:
    eps = 1.0 if setting.endswith("private") else None
    s = Scenario(setting=setting, epsilon=eps, instances="held_out", **SMALL)
    spec = _policy(exported[setting])
    vector = evaluate(spec, s, trials=3, seed=1)
    pettingzoo = evaluate(spec, s, trials=3, seed=1, interactive=True)
    assert vector.meta["path"] == "vector"
    np.testing.assert_array_equal(vector.regret, pettingzoo.regret)


def test_a_forged_message_is_dropped_not_fatal(exported: dict[str, Path]) -> None:
    s = Scenario(setting="neighbours", instances="held_out", byzantine=1, attack="boost", **SMALL)
    curves = evaluate(_policy(exported["neighbours"]), s, trials=2, seed=0)
    assert np.isfinite(curves.regret).all()


def test_refusals() -> None:
    with pytest.raises(ValueError, match="weights lack"):
        LearnedPolicy({"w1": np.zeros(1)})
    with pytest.raises(ValueError, match="no shipped learned model"):
        model_record("learned_nowhere")
    with pytest.raises(ValueError, match="no shipped learned model"):
        learned("learned_nowhere")
    assert all(n.startswith("learned_") for n in shipped())
