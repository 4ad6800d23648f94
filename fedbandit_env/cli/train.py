"""``fedbandit train``: a learned policy for one information setting, on train instances.

Example::

    fedbandit train ppo --setting local --timesteps 200000 --out runs/ppo_local
    fedbandit bench --policies ppo:runs/ppo_local/model.zip,local_ucb,oracle_ucb,random \\
        --setting local --held-out --horizon 200 --trials 100
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fedbandit_env import registry
from fedbandit_env.cli.options import add_setting_options, renamed, scenario_from_args
from fedbandit_env.extras import require
from fedbandit_env.rl.common import REWARD_ALIASES, REWARDS
from fedbandit_env.rl.stack import SB3_ALGOS
from fedbandit_env.scenario.instances import instance_names

PARSER_KWARGS: dict[str, Any] = {"formatter_class": argparse.ArgumentDefaultsHelpFormatter}
TRAIN_OUT = Path("runs/model")
TRAIN_DEFAULTS: dict[str, Any] = {
    "horizon": 200,
    "setting": "local",
    "out": TRAIN_OUT,
    "instance": "biased",
    "instances": "train",
}
"""Where training's defaults differ from bench's: short episodes (many instances per
update), a setting is required, and the instances are ``biased`` (global means plus
zero-sum agent biases), where no single-agent rule finds the global best arm better
than the local best arm (on ``conflicting`` one does: the lowest local arm above 0.5)."""
BENCH_ONLY: dict[str, str] = {
    "policies": "--policies",
    "trials": "--trials",
    "record_every": "--record-every",
    "no_plot": "--no-plot",
}
"""Options the shared setting parser offers that only a benchmark reads (dest -> flag);
``fedbandit train`` refuses them, and the registered policies' options, by name."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The algorithm, the setting options, ``--timesteps``, ``--reward``, ``--threads``.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["ppo", "--timesteps", "1000"])
        >>> a.algo, a.timesteps, a.horizon, a.setting, a.reward
        ('ppo', 1000, 200, 'local', 'own')
    """
    parser.add_argument(
        "algo",
        choices=SB3_ALGOS,
        help="stable-baselines3 algorithm (recurrent_ppo: sb3-contrib's LSTM PPO)",
    )
    add_setting_options(parser, out=TRAIN_OUT)
    parser.set_defaults(**TRAIN_DEFAULTS)
    parser.add_argument("--timesteps", type=int, default=200_000, help="agent-steps of training")
    parser.add_argument(
        "--reward",
        choices=REWARDS,
        type=renamed("--reward", REWARD_ALIASES),
        default="own",
        help="own: the agent's own reward (what it observes); team_value: the team's "
        "estimate of the pulled arm's global mean from the agent's own means and those "
        "it hears (honest, cooperative); neg_regret: minus the agent's regret against the "
        "global means; team: minus the agents' mean regret (these two privileged: "
        "recorded and marked in results)",
    )
    parser.add_argument(
        "--net",
        choices=("mlp", "arms", "posterior"),
        default="mlp",
        help="mlp: SB3's MlpPolicy on the flat observation; arms: one shared network "
        "scores every arm from its statistics (permutation-equivariant; ppo, a2c, and "
        "recurrent_ppo --batched: the arms net with a memory per arm, RL^2-style); "
        "posterior: one shared network scores every arm from the team posterior "
        "(TeamPosterior: the agent sends its counts and sums and reads every sender's; "
        "horizon-free; ppo, trained batched)",
    )
    parser.add_argument(
        "--checkpoints",
        type=int,
        default=0,
        metavar="K",
        help="batched training: score the policy K times on 512 train-split validation "
        "episodes (instances no training episode used; never held-out ones) and keep the "
        "best weights (0: the last)",
    )
    parser.add_argument(
        "--device",
        default=None,
        metavar="DEVICE",
        help="where the batched trainer runs the envs and the network: numpy (the "
        "default: NumPy envs, torch on the CPU), cpu, cuda, cuda:N or auto (a GPU where "
        "torch sees one); the saved model runs anywhere",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier model at --out (model.zip and train.json; refused without it)",
    )
    parser.add_argument(
        "--horizon-free",
        action="store_true",
        help="observe log(1+t), pull shares n/t and UCB1's width instead of the step and "
        "counts (HorizonFree), so the model reads the same numbers at any horizon",
    )
    parser.add_argument(
        "--episode-lengths",
        type=_length_range,
        default=None,
        metavar="LOW:HIGH",
        help="train over episodes cut at lengths drawn log-uniformly from LOW..HIGH "
        "(HIGH becomes the horizon); with --horizon-free",
    )
    parser.add_argument(
        "--share-counts",
        action="store_true",
        help="send pull shares n/t after the means (counts and means, as Gossip_UCB and "
        "cooperative UCB do) where the setting carries messages",
    )
    parser.add_argument(
        "--copies",
        type=int,
        default=None,
        help="env copies per batch (more instances per update; default 1, 64 with --batched)",
    )
    parser.add_argument(
        "--batched",
        action="store_true",
        help="ppo, recurrent_ppo: train on the vector env with a batched PPO loop "
        "(fedbandit_env.rl.batched_ppo) instead of SB3's; the same policies and saved "
        "model (recurrent: truncated backpropagation through 25-step rollouts)",
    )
    hide_bench_options(parser)


def hide_bench_options(parser: argparse.ArgumentParser) -> None:
    """A benchmark's options on a training command: no default (so
    :func:`refuse_bench_options` can tell them given, and say where they belong) and
    left out of ``--help`` (which lists what the command reads).

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)  # calls it
        >>> "--trials" in p.format_help(), p.parse_args(["ppo", "--trials", "3"]).trials
        (False, 3)
    """
    hidden = {*BENCH_ONLY, *_policy_options()}
    parser.set_defaults(**dict.fromkeys(hidden))
    for action in parser._actions:
        if action.dest in hidden:
            action.help = argparse.SUPPRESS
    parser._action_groups = [  # a group left with nothing to show goes too
        g
        for g in parser._action_groups
        if any(a.help != argparse.SUPPRESS for a in g._group_actions) or not g._group_actions
    ]


def _length_range(text: str) -> tuple[int, int]:
    """``"200:2000"`` -> ``(200, 2000)``.

    Examples:
        >>> _length_range("200:2000")
        (200, 2000)
    """
    low, sep, high = text.partition(":")
    try:
        pair = int(low), int(high)
    except ValueError:
        pair = (0, 0)
    if not sep or not 1 <= pair[0] <= pair[1]:
        raise argparse.ArgumentTypeError(f"expected LOW:HIGH with 1 <= LOW <= HIGH, got {text!r}")
    return pair


def _policy_options() -> dict[str, str]:
    """The registered policies' options (dest -> flag): a benchmark's, not a learner's."""
    return {name: opt.flag for name, (opt, _) in registry.declared_options().items()}


def refuse_bench_options(args: argparse.Namespace, command: str = "train") -> None:
    """Refuse the options a benchmark reads and training would silently ignore
    (``--policies``, ``--trials``, ..., the policies' own options, and held-out
    instances, which no training run may see).

    Raises:
        ValueError: Naming the first such option given.

    Examples:
        >>> from fedbandit_env.cli import build_parser
        >>> args = build_parser("train").parse_args(["train", "ppo", "--trials", "5"])
        >>> try:
        ...     refuse_bench_options(args)
        ... except ValueError as err:
        ...     print(str(err)[:38])
        fedbandit train does not read --trials
    """
    for dest, flag in {**BENCH_ONLY, **_policy_options()}.items():
        value = getattr(args, dest, None)
        if value is not None and value is not False:
            raise ValueError(
                f"fedbandit {command} does not read {flag} (a fedbandit bench option): "
                "evaluate what it saves with fedbandit bench"
            )
    if args.instances == "held_out":
        raise ValueError(
            f"fedbandit {command} draws train instances; --held-out (--instances held_out) "
            "is for evaluating what it saves: fedbandit bench --held-out"
        )
    if args.instances == "fixed":
        raise ValueError(
            f"fedbandit {command} draws train instances (each episode its own); --instances "
            "fixed is for benchmarking on one instance: fedbandit bench --instances fixed"
        )


def refuse_inert_training_options(args: argparse.Namespace) -> None:
    """Refuse training options that would change nothing: ``--episode-lengths`` without
    ``--horizon-free`` (a horizon-bound learner would be shown horizons it cannot read),
    and ``--epsilon`` or ``--privacy-noise secure`` outside a ``+private`` setting (no
    noise is drawn).

    Raises:
        ValueError: Naming the option.

    Examples:
        >>> from fedbandit_env.cli import build_parser
        >>> args = build_parser("train").parse_args(
        ...     ["train", "ppo", "--setting", "neighbours", "--episode-lengths", "50:200"])
        >>> try:
        ...     refuse_inert_training_options(args)
        ... except ValueError as err:
        ...     print(str(err)[:45])
        --episode-lengths needs --horizon-free (a lea
    """
    if args.episode_lengths is not None and not args.horizon_free:
        raise ValueError(
            "--episode-lengths needs --horizon-free (a learner that reads the step and the "
            "horizon cannot be trained over several horizons)"
        )
    private = (args.setting or "").endswith("+private")
    if not private and args.privacy_noise != "seeded":
        raise ValueError(
            f"--privacy-noise {args.privacy_noise} changes nothing in the {args.setting!r} "
            "setting: no noise is drawn (use a +private setting)"
        )
    if not private and args.epsilon != 1.0:
        raise ValueError(
            f"--epsilon {args.epsilon} changes nothing in the {args.setting!r} setting: "
            "no noise is drawn (use a +private setting)"
        )


def run(args: argparse.Namespace) -> None:
    """Train, save, and say how to evaluate the model on held-out instances."""
    for module in ("torch", "stable_baselines3"):  # one line naming the extra, if missing
        require(module, "rl", "fedbandit train")
    from fedbandit_env.files import check_writable
    from fedbandit_env.rl.stack import LearnerStack
    from fedbandit_env.rl.train import train_model

    refuse_bench_options(args)
    linear = args.instance in instance_names(linear=True)
    if linear and args.setting not in (None, "local"):
        raise ValueError(
            f"a learner on a linear scenario trains in the 'local' setting (its own "
            f"contexts and rewards), not {args.setting!r}: it does not speak the sync protocol"
        )
    if linear and (args.horizon_free or args.share_counts):
        raise ValueError("--horizon-free and --share-counts read per-arm statistics: not linear")
    if args.setting is None and not linear:
        raise ValueError("fedbandit train needs --setting (the setting it will be compared in)")
    refuse_inert_training_options(args)
    posterior = args.net == "posterior"
    if posterior:
        if args.algo != "ppo" or linear:
            raise ValueError("--net posterior is a PPO learner on a multi-armed setting")
        if args.horizon_free or args.share_counts or args.episode_lengths is not None:
            raise ValueError(
                "--net posterior reads the team posterior, horizon-free already, and sends "
                "counts and sums: --horizon-free, --share-counts and --episode-lengths do "
                "not apply"
            )
        args.batched = True
    if args.checkpoints < 0:
        raise ValueError(f"--checkpoints must be >= 0, got {args.checkpoints}")
    if args.checkpoints and not args.batched:
        raise ValueError(
            "--checkpoints is the batched trainer's: add --batched (or --net posterior)"
        )
    if args.device is not None and not args.batched:
        raise ValueError("--device is the batched trainer's: add --batched (or --net posterior)")
    if args.device is not None:
        from fedbandit_env.backend import backend

        backend(args.device)  # a clear error for an unknown device, before any work
    if args.episode_lengths is not None:
        args.horizon = args.episode_lengths[1]  # the env runs the longest episode
    scenario = scenario_from_args(args)
    check_writable(args.out)  # before training, not after
    if linear:  # its raw observation: LocalStatistics is per arm, and arms are positions
        stack = LearnerStack(statistics=False, reward=args.reward, setting=args.setting)
    elif posterior:
        stack = LearnerStack.for_setting(
            args.setting, scenario.epsilon, reward=args.reward, posterior=True
        )
    else:
        stack = LearnerStack.for_setting(
            args.setting,
            scenario.epsilon,
            reward=args.reward,
            horizon_free=args.horizon_free,
            share_counts=args.share_counts,
        )
    where = f"in the {args.setting!r} setting" if args.setting else "on its own contexts"
    print(
        f"training {args.algo} {where} on train instances of "
        f"{scenario.distribution_name}, T={scenario.horizon}, {args.timesteps} agent-steps"
        + (f" (privileged reward: {stack.reward})" if stack.privileged else "")
    )
    path = train_model(
        args.algo,
        scenario,
        stack,
        args.timesteps,
        args.out,
        seed=args.seed,
        threads=args.threads,
        copies=args.copies if args.copies is not None else (64 if args.batched else 1),
        net=args.net,
        batched=args.batched,
        progress=not args.no_progress,
        episode_lengths=args.episode_lengths,
        device=args.device,
        checkpoints=args.checkpoints,
        overwrite=args.overwrite,
    )
    print(f"wrote {path} and {path.with_name('train.json')}")
    ran = int(json.loads(path.with_name("train.json").read_text()).get("agent_steps", 0))
    if ran > 1.1 * args.timesteps:
        print(
            f"fedbandit: warning: trained {ran:,} agent-steps, not --timesteps "
            f"{args.timesteps:,}: training runs whole rollouts (every agent of --copies envs "
            "for the rollout's steps), so a smaller budget rounds up to one",
            file=sys.stderr,
        )
    bandit = "linear" if linear else "mab"
    # the setting's strongest references, the local one and the table's bounds (tags)
    strongest = [
        p
        for p in registry.tagged("strongest", bandit)
        if args.setting and registry.spec(p).runs_in(args.setting)
    ]
    others = ",".join(
        dict.fromkeys(
            strongest
            + registry.tagged("local", bandit)
            + registry.tagged("pooled", bandit)
            + registry.tagged("floor", bandit)
        )
    )
    where = f"--instance {scenario.instance} --setting {args.setting}"
    if linear:
        where = f"--instance {scenario.instance} --dim {scenario.dim} --setting {args.setting}"
    print(
        f"evaluate on held-out instances: fedbandit bench --policies {args.algo}:{path},"
        f"{others} {where} --held-out "
        f"--agents {scenario.n_agents} --arms {scenario.n_arms} --horizon {scenario.horizon}"
    )


__all__ = ["BENCH_ONLY", "add_arguments", "hide_bench_options", "refuse_bench_options", "run"]
