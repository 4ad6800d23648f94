"""Shared type aliases (the stable-baselines3 ``type_aliases.py`` habit).

Examples:
    >>> import numpy as np
    >>> from fedbandit_env.type_aliases import FloatArray
    >>> x: FloatArray = np.zeros(3)
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]
"""A float64 NumPy array."""
Float32Array: TypeAlias = npt.NDArray[np.float32]
"""A float32 NumPy array (observations)."""
IntArray: TypeAlias = npt.NDArray[np.int64]
"""An int64 NumPy array."""
BoolArray: TypeAlias = npt.NDArray[np.bool_]
"""A boolean NumPy array."""
SeedLike: TypeAlias = int | np.random.SeedSequence | None
"""Anything ``numpy.random.default_rng`` accepts as a seed that we use."""
AgentID: TypeAlias = str
"""PettingZoo agent name, ``"agent_0"`` ... ``"agent_{N-1}"``."""
Observation: TypeAlias = dict[str, Any]
"""One agent's observation: a dict matching its ``observation_space``."""
Action: TypeAlias = Any
"""One agent's action: an arm (int) or ``{"arm": int, "message": array}``."""
StepResult: TypeAlias = tuple[
    dict[AgentID, Observation],
    dict[AgentID, float],
    dict[AgentID, bool],
    dict[AgentID, bool],
    dict[AgentID, dict[str, Any]],
]
"""What ``ParallelEnv.step`` returns: observations, rewards, terminations, truncations, infos."""
