"""Seeding helpers: one ``SeedSequence`` per run, spawned, never global state.

Every consumer of randomness draws from its own stream, so that no draw one party can
observe is a function of a draw that must stay secret (a privacy mechanism's noise
above all). The streams are ``SeedSequence`` children named by their spawn key; keys of
different consumers differ in length or in their first entry, so two streams never
coincide, *whatever pair of seeds* the env and the team are given (``env.reset(seed=0);
team.reset(env, seed=0)`` is safe):

- env master (spawns the two below): ``SeedSequence(env_seed)``, by ``env.reset(seed)``;
- rewards: env seed, key ``(0,)`` (:func:`env_generators`);
- protocol (gossip edges, participants): env seed, key ``(1,)`` (:func:`env_generators`);
- the wrapper ``d`` layers above the env (``PrivateRewards``' noise, ...): env seed, key
  ``(2, d)`` (:func:`wrapper_generator`, ``ParallelWrapper.stream``);
- the episode's instance, for an env that draws one per reset from a distribution:
  env seed, key ``(4, split)`` with ``split`` 0 for train and 1 for held-out instances
  (:func:`instance_seed`; the two sets of instance seeds never meet);
- agent ``i`` of a team: team seed, key ``(.., 3, i)`` (:func:`team_streams`);
- a centralized team (the oracle): team seed, key ``(.., 3, 0)`` (:func:`team_streams`);
- a learned model's action draws (``ModelTeam``, ``LearnerAmong``): team seed, key
  ``(.., 5)`` (:func:`model_generator`);
- a :class:`~fedbandit_env.vector.policy.VectorPolicy`'s draws for one env: team seed,
  key ``(.., 6)`` (:func:`vector_policy_generator`).

(An env reset *without* a seed spawns the next children of its master, keys ``(2,)``,
``(3,)``, ...: one entry long, so still distinct from every two-entry key above.) The
runners split each trial's seed into an env seed and a team seed first
(:func:`trial_seeds`); the fast path derives every generator with these same functions,
which is what makes its replay of the PettingZoo path exact.

Examples:
    >>> a, b = spawn(0, 2)
    >>> a.entropy == b.entropy and a.spawn_key != b.spawn_key
    True
"""

from __future__ import annotations

import numpy as np

from fedbandit_env.type_aliases import SeedLike


def seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """``seed`` as a ``SeedSequence`` (fresh OS entropy for ``None``).

    Examples:
        >>> seed_sequence(3).entropy
        3
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return np.random.SeedSequence(seed)


def spawn(seed: SeedLike, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child sequences of ``seed``, without mutating ``seed``.

    ``SeedSequence.spawn`` advances a counter inside the parent, so spawning twice from
    one object gives different children; these are always children ``0 .. n-1``.

    Examples:
        >>> ss = np.random.SeedSequence(1)
        >>> spawn(ss, 2)[1].spawn_key == spawn(ss, 2)[1].spawn_key == (1,)
        True
    """
    parent = seed_sequence(seed)
    return [
        np.random.SeedSequence(
            parent.entropy, spawn_key=(*parent.spawn_key, k), pool_size=parent.pool_size
        )
        for k in range(n)
    ]


def int_seed(seed: SeedLike) -> int:
    """A 32-bit int drawn from ``seed`` (for APIs that only take ints, e.g. ``reset``).

    Examples:
        >>> int_seed(0) == int_seed(np.random.SeedSequence(0))
        True
    """
    return int(seed_sequence(seed).generate_state(1)[0])


def trial_seeds(seed: SeedLike, n_trials: int) -> list[tuple[int, np.random.SeedSequence]]:
    """``(env_seed, team_seed)`` of each trial: the one derivation both paths use.

    Trial ``j`` takes the ``j``-th child of ``seed``, split in two: an int that seeds the
    env's ``reset`` (whose reward and protocol generators are spawned from it) and a
    sequence the team spawns its agents' generators from.

    Examples:
        >>> (a, _), (b, _) = trial_seeds(0, 2)
        >>> a != b
        True
    """
    return [split_trial_seed(child) for child in spawn(seed, n_trials)]


def split_trial_seed(seed: SeedLike) -> tuple[int, np.random.SeedSequence]:
    """One trial's ``(env_seed, team_seed)`` (see :func:`trial_seeds`).

    Examples:
        >>> split_trial_seed(3)[0] == split_trial_seed(3)[0]
        True
    """
    env_ss, team_ss = spawn(seed, 2)
    return int_seed(env_ss), team_ss


def env_streams(master: np.random.Generator, linear: bool = False) -> list[np.random.Generator]:
    """The generators an env's master spawns at every reset, in this order: the rewards'
    and the protocol's, and the linear env's decision sets' (the one statement of the
    split: the envs, ``MABCore`` and the compiled loops all take it from here).

    Examples:
        >>> master = np.random.default_rng(0)
        >>> len(env_streams(master)), len(env_streams(master, linear=True))
        (2, 3)
    """
    return master.spawn(3 if linear else 2)


def env_master(env_seed: int) -> np.random.Generator:
    """The master generator of ``reset(seed=env_seed)`` (as ``gymnasium``'s
    ``seeding.np_random`` makes it).

    Examples:
        >>> env_master(3).random() == np.random.default_rng(3).random()
        True
    """
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(env_seed)))


def env_generators(env_seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """The reward and protocol generators an env spawns at ``reset(seed=env_seed)``.

    Examples:
        >>> r1, _ = env_generators(5); r2, _ = env_generators(5)
        >>> r1.random() == r2.random()
        True
    """
    reward, protocol = env_streams(env_master(env_seed))
    return reward, protocol


def linear_env_generators(
    env_seed: int,
) -> tuple[np.random.Generator, np.random.Generator, np.random.Generator]:
    """The reward, protocol and decision-set generators the linear env spawns at
    ``reset(seed=env_seed)``.

    Examples:
        >>> a, _, sets = linear_env_generators(5)
        >>> sets.random() == linear_env_generators(5)[2].random() != a.random()
        True
    """
    reward, protocol, sets = env_streams(env_master(env_seed), linear=True)
    return reward, protocol, sets


WRAPPER_KEY = 2
"""First spawn-key entry of the wrappers' streams (see the module's table)."""
TEAM_KEY = 3
"""Spawn-key entry under a team seed that precedes an agent's index."""


def wrapper_generator(env_seed: int, depth: int = 0) -> np.random.Generator:
    """The generator of the wrapper ``depth`` layers above the env, after
    ``reset(seed=env_seed)``: spawn key ``(2, depth)``, never the reward or the protocol
    stream, and different for two wrappers of one stack.

    Examples:
        >>> wrapper_generator(1).random() == wrapper_generator(1).random()
        True
        >>> _, protocol = env_generators(1)
        >>> wrapper_generator(1).random() != protocol.random()   # independent streams
        True
    """
    depth = int(depth)
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    root = seed_sequence(env_seed)
    key = (*root.spawn_key, WRAPPER_KEY, depth)
    return np.random.default_rng(
        np.random.SeedSequence(root.entropy, spawn_key=key, pool_size=root.pool_size)
    )


INSTANCE_KEY = 4
"""First spawn-key entry of the instance streams (see the module's table)."""
MODEL_KEY = 5
"""Spawn-key entry of a learned model's action draws (see the module's table)."""
VECTOR_POLICY_KEY = 6
"""Spawn-key entry of a vector policy's draws for one env (see the module's table)."""
SPLITS: dict[str, int] = {"train": 0, "held_out": 1}
"""Instance splits and their second key entry: train and held-out instance seeds are
disjoint by construction."""


def instance_seed(env_seed: SeedLike, split: str = "train") -> np.random.SeedSequence:
    """The seed of the instance an env draws at ``reset(seed=env_seed)`` from its problem
    distribution: spawn key ``(4, 0)`` for ``split="train"``, ``(4, 1)`` for
    ``"held_out"``.

    Raises:
        ValueError: For an unknown split.

    Examples:
        >>> instance_seed(7, "held_out").spawn_key
        (4, 1)
        >>> a = np.random.default_rng(instance_seed(7)).random()
        >>> b = np.random.default_rng(instance_seed(7, "held_out")).random()
        >>> a != b
        True
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    root = seed_sequence(env_seed)
    key = (*root.spawn_key, INSTANCE_KEY, SPLITS[split])
    return np.random.SeedSequence(root.entropy, spawn_key=key, pool_size=root.pool_size)


def team_streams(seed: SeedLike, n: int) -> list[np.random.SeedSequence]:
    """The ``n`` agents' streams of a team seeded with ``seed``: key ``(.., 3, i)``.

    Distinct from every env stream for any pair of seeds (see the module's table), so
    seeding the env and the team with the same int is safe.

    Examples:
        >>> [s.spawn_key for s in team_streams(0, 2)]
        [(3, 0), (3, 1)]
        >>> reward, protocol = env_generators(0)
        >>> rng = np.random.default_rng(team_streams(0, 1)[0])
        >>> rng.random() not in (reward.random(), protocol.random())
        True
    """
    root = seed_sequence(seed)
    return [
        np.random.SeedSequence(
            root.entropy, spawn_key=(*root.spawn_key, TEAM_KEY, i), pool_size=root.pool_size
        )
        for i in range(n)
    ]


def team_generators(seed: SeedLike, n: int) -> list[np.random.Generator]:
    """One generator per agent from :func:`team_streams` (fresh OS entropy for ``None``).

    Examples:
        >>> a, b = team_generators(0, 2)
        >>> a.random() != b.random()
        True
    """
    if seed is None:
        return [np.random.default_rng() for _ in range(n)]
    return [np.random.default_rng(s) for s in team_streams(seed, n)]


def model_generator(seed: SeedLike) -> np.random.Generator:
    """The action draws of a learned model's team seeded with ``seed``: key ``(.., 5)``
    (fresh OS entropy for ``None``), apart from the agents' streams of a reference team
    reset with the same seed.

    Examples:
        >>> a = model_generator(0).random()
        >>> a == model_generator(0).random() and a != team_generators(0, 1)[0].random()
        True
    """
    if seed is None:
        return np.random.default_rng()
    root = seed_sequence(seed)
    key = (*root.spawn_key, MODEL_KEY)
    return np.random.default_rng(
        np.random.SeedSequence(root.entropy, spawn_key=key, pool_size=root.pool_size)
    )


def vector_policy_generator(seed: SeedLike) -> np.random.Generator:
    """A :class:`~fedbandit_env.vector.policy.VectorPolicy`'s generator for the env of the
    trial whose team seed is ``seed``: key ``(.., 6)`` (fresh OS entropy for ``None``), the
    same on the vector path and the PettingZoo path.

    Examples:
        >>> a = vector_policy_generator(0).random()
        >>> a == vector_policy_generator(0).random() and a != model_generator(0).random()
        True
    """
    if seed is None:
        return np.random.default_rng()
    root = seed_sequence(seed)
    key = (*root.spawn_key, VECTOR_POLICY_KEY)
    return np.random.default_rng(
        np.random.SeedSequence(root.entropy, spawn_key=key, pool_size=root.pool_size)
    )
