"""Cooperative TS with its exact Beta sampler, registered beside the default moment
sampler so that ``fedbandit bench`` can pair the two on the same instances (the
references page's moment-sampler tables, ``examples/references_numbers.py``)::

    fedbandit bench --import examples/coop_ts_beta.py --setting neighbours \\
        --held-out --instance biased --horizon 200 --policies coop_ts,coop_ts_beta

``coop_ts_beta`` and ``coop_ts_relay_beta`` are ``coop_ts`` and ``coop_ts_relay`` with
``posterior="beta"``: the average of one Beta draw per held row and arm, where the
default draws that average from the Gaussian of its mean and variance.
"""

from __future__ import annotations

from fedbandit_env import registry


def register() -> None:
    """Register ``coop_ts_beta`` and ``coop_ts_relay_beta`` (again: a no-op).

    Examples:
        >>> register()
        >>> registry.spec("coop_ts_beta").kwargs["posterior"]
        'beta'
    """
    for share, pid in (("hold", "coop_ts_beta"), ("relay", "coop_ts_relay_beta")):
        registry.register(
            pid,
            "baselines.thompson:CooperativeTS",
            description=f"cooperative Thompson sampling ({share}) with the exact Beta sampler",
            family="thompson",
            kwargs={"share": share, "posterior": "beta"},
            fast_entry_point="baselines.thompson.fast:run_coop_ts",
            settings=("neighbours", "gossip"),
        )


register()
