"""Thompson sampling: local (the no-communication reference beside UCB1 and KL-UCB) and
cooperative (agents share their per-arm counts and sums; a receiver averages posterior
draws of the local means it holds), with a private form under ``PrivateRewards``.

``policies.py`` holds the policies, ``kernels.py`` their mathematics, ``fast.py`` the
batched trial loop; ``baselines.registration`` registers them as ``local_ts``,
``coop_ts``, ``coop_ts_relay`` and ``private_coop_ts``.

Examples:
    >>> from baselines.thompson import CooperativeTS
    >>> CooperativeTS("relay").requirements(n_agents=3, n_arms=2).message_dim
    15
"""

from typing import Any

from baselines.thompson.policies import CooperativeTS, LocalTS, PrivateCooperativeTS


def private_ts_options(options: dict[str, Any], problem: Any) -> dict[str, Any]:
    """The private form's constructor arguments from the setting options: its
    ``epsilon`` (the setting's).

    Examples:
        >>> private_ts_options({"epsilon": 2.0, "rounds": 3}, None)
        {'epsilon': 2.0}
    """
    return {"epsilon": options.get("epsilon", 1.0)}


__all__ = ["CooperativeTS", "LocalTS", "PrivateCooperativeTS", "private_ts_options"]
