"""Seeding helpers: one ``SeedSequence`` per run, spawned, never global state.

Example:
    >>> a, b = spawn(0, 2)
    >>> a.entropy == b.entropy and a.spawn_key != b.spawn_key
    True
"""

from __future__ import annotations

import numpy as np

from fedbandit_env.type_aliases import SeedLike


def seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """``seed`` as a ``SeedSequence`` (fresh OS entropy for ``None``).

    Example:
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

    Example:
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

    Example:
        >>> int_seed(0) == int_seed(np.random.SeedSequence(0))
        True
    """
    return int(seed_sequence(seed).generate_state(1)[0])


def trial_seeds(seed: SeedLike, n_trials: int) -> list[tuple[int, np.random.SeedSequence]]:
    """``(env_seed, team_seed)`` of each trial: the one derivation both paths use.

    Trial ``j`` takes the ``j``-th child of ``seed``, split in two: an int that seeds the
    env's ``reset`` (whose reward and protocol generators are spawned from it) and a
    sequence the team spawns its agents' generators from.

    Example:
        >>> (a, _), (b, _) = trial_seeds(0, 2)
        >>> a != b
        True
    """
    return [split_trial_seed(child) for child in spawn(seed, n_trials)]


def split_trial_seed(seed: SeedLike) -> tuple[int, np.random.SeedSequence]:
    """One trial's ``(env_seed, team_seed)`` (see :func:`trial_seeds`).

    Example:
        >>> split_trial_seed(3)[0] == split_trial_seed(3)[0]
        True
    """
    env_ss, team_ss = spawn(seed, 2)
    return int_seed(env_ss), team_ss


def env_generators(env_seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """The reward and protocol generators an env spawns at ``reset(seed=env_seed)``.

    Example:
        >>> r1, _ = env_generators(5); r2, _ = env_generators(5)
        >>> r1.random() == r2.random()
        True
    """
    master = np.random.Generator(np.random.PCG64(np.random.SeedSequence(env_seed)))
    reward, protocol = master.spawn(2)
    return reward, protocol


def wrapper_generator(env_seed: int) -> np.random.Generator:
    """The generator a wrapper draws from after ``reset(seed=env_seed)``.

    Example:
        >>> wrapper_generator(1).random() == wrapper_generator(1).random()
        True
    """
    return np.random.default_rng(spawn(env_seed, 2)[1])
