"""Li & Song's private arm elimination: CDP-MAB (server), DDP-MAB (GIS flooding) and
HDP-MAB (hybrid), with partial participation and limited rounds.

``policies.py`` holds the per-agent policies, ``kernels.py`` their mathematics,
``vector.py`` their vector form and ``fast.py`` its rollouts, the fast path;
``baselines.registration`` registers them as
``cdp_mab``, ``ddp_mab`` and ``hdp_mab``.

Examples:
    >>> from baselines.elimination import CDPMAB
    >>> CDPMAB(epsilon=0.5).privacy_epsilon(n_agents=4, n_arms=3)
    2.0
"""

from typing import Any

import numpy as np

from baselines.elimination.policies import (
    CDPMAB,
    DDPMAB,
    HDPMAB,
    EliminationPolicy,
    private_epoch_means,
)


def elimination_options(options: dict[str, Any], problem: Any) -> dict[str, Any]:
    """DDP-MAB's and HDP-MAB's constructor arguments from the setting options:
    ``epsilon`` (``inf``: no privacy, i.e. ``None``), ``noise`` when
    ``privacy_noise`` is not the default, and with ``rounds`` (0: unlimited) the
    smallest gap ``min_gap`` (default: the instance's own).

    Examples:
        >>> elimination_options({"epsilon": float("inf"), "rounds": 3, "min_gap": None},
        ...                     type("P", (), {"min_gap": 0.05}))
        {'epsilon': None, 'rounds': 3, 'min_gap': 0.05}
    """
    epsilon = float(options.get("epsilon", 1.0))
    if not epsilon > 0:  # nan too: it must not quietly mean "no privacy"
        raise ValueError(f"epsilon must be > 0 (inf: no privacy), got {epsilon!r}")
    kw: dict[str, Any] = {"epsilon": epsilon if np.isfinite(epsilon) else None}
    if options.get("privacy_noise", "seeded") != "seeded":
        kw["noise"] = options["privacy_noise"]
    if options.get("rounds"):
        kw["rounds"] = options["rounds"]
        given = options.get("min_gap")
        kw["min_gap"] = given if given is not None else problem.min_gap
    return kw


def cdp_mab_options(options: dict[str, Any], problem: Any) -> dict[str, Any]:
    """CDP-MAB's: :func:`elimination_options` and the ``participation`` rate.

    Examples:
        >>> cdp_mab_options({"epsilon": 1.0, "participation": 0.5}, None)
        {'epsilon': 1.0, 'participation': 0.5}
    """
    kw = elimination_options(options, problem)
    return {"epsilon": kw.pop("epsilon"), "participation": options.get("participation", 1.0), **kw}


__all__ = [
    "CDPMAB",
    "DDPMAB",
    "HDPMAB",
    "EliminationPolicy",
    "cdp_mab_options",
    "elimination_options",
    "private_epoch_means",
]
