"""What every family's batched trial loop uses: per-agent generators and recording.

A family's ``fast.py`` holds its compiled trial loop and a runner
``(setup, (env_seed, team_seed)) -> TrialResult`` that
:func:`fedbandit_env.runner.fast.run_fast` drives (the registry's
``fast_entry_point``). The pieces here keep those loops equal to the PettingZoo path:
:func:`agent_rngs` are the generators :class:`~fedbandit_env.policies.IndependentTeam`
gives its agents, :func:`record_step` what every loop records at the end of a step.

What keeps a loop fast (each found with ``perf`` and gdb on ``NRT_incref``):

- numba counts references to array views and to the array arguments of a called
  function with *atomic* operations, and LLVM's pruning rarely removes them once the
  callee has a loop or a ``raise``. Inside the per-step and per-agent loops, index the
  ``(N, M)`` state directly; call array-taking helpers once per step for all agents, or
  only when needed (as :func:`record_step`).
- ``Generator.integers`` allocates a one-element array per scalar draw: draw with
  :func:`fedbandit_env.rng_kernels.integer_below` (NumPy's draw, bit for bit).
- An item of a numba typed list costs ~40 ns: per-agent generators go in as a
  :func:`fedbandit_env.rng_kernels.generator_table`.
- After editing a helper module, run ``make clean-kernels``: numba's disk cache is keyed
  by the file of the cached function, not by the modules it calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, typed

from fedbandit_env.seeding import team_generators
from fedbandit_env.type_aliases import Float32Array, FloatArray, IntArray


def agent_rngs(team_seed: np.random.SeedSequence, n: int) -> list[np.random.Generator]:
    """The generators an ``IndependentTeam`` gives its agents. Loops that draw from them
    every step take them as a ``generator_table`` (an item of a numba list costs about
    40 ns, a row of the table nothing); the caller keeps this list alive.

    Examples:
        >>> len(agent_rngs(np.random.SeedSequence(0), 3))
        3
    """
    return team_generators(team_seed, n)


def agent_generators(team_seed: np.random.SeedSequence, n: int) -> Any:
    """:func:`agent_rngs` as a numba typed list (for loops that draw rarely)."""
    return typed.List(agent_rngs(team_seed, n))


@njit(cache=True, nogil=True)
def record_step(
    arms: IntArray,
    seen: Float32Array,
    cum: FloatArray,
    out: FloatArray,
    steps: IntArray,
    r: int,
    s: int,
    t_arms: IntArray,
    t_rewards: Float32Array,
) -> int:  # pragma: no cover
    """End of step ``s`` when something is kept: trace the arms and the (float32) observed
    rewards if asked, record the regret at the recorded steps. Returns the next record
    index. Every kernel adds the step's gaps to ``cum`` itself and calls this only when
    ``t_arms`` is non-empty or ``s == steps[r]``: a call with array arguments costs
    atomic reference counts, a dozen a step for nothing otherwise."""
    if t_arms.shape[0]:
        t_arms[s - 1] = arms
        t_rewards[s - 1] = seen
    if r < steps.size and s == steps[r]:
        out[:, r] = cum
        return r + 1
    return r
