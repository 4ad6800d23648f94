"""The federated bandits, written once: the lowest layer of the envs.

- :class:`MABCore` (:mod:`fedbandit_env.core.mab`): ``B`` episodes of ``N`` agents and
  ``M`` arms as arrays, stepped by both views: the PettingZoo env
  (:class:`~fedbandit_env.envs.federated_mab.FederatedMABEnv`, ``B = 1``) and the
  Gymnasium vector env (:class:`~fedbandit_env.vector.FederatedMABVecEnv`);
- :class:`LinearCore` (:mod:`fedbandit_env.core.linear`): ``B`` episodes of the linear
  contextual bandit, the same shape; the PettingZoo linear env
  (:class:`~fedbandit_env.envs.federated_linear.FederatedLinearEnv`) is its ``B = 1``
  view;
- :class:`Router` and :class:`Routed` (:mod:`fedbandit_env.core.routing`): what a
  protocol delivered in ``B`` envs at one step; :func:`inbox` gives the per-receiver
  (PettingZoo) form.

It imports the problems, the network, the protocols and the backend, never ``envs`` or
``vector`` (``tests/test_layout.py`` checks that no import circle exists anywhere).

Examples:
    >>> from fedbandit_env.core import MABCore
    >>> MABCore.__module__
    'fedbandit_env.core.mab'
"""

from fedbandit_env.core.linear import LinearCore
from fedbandit_env.core.mab import CoreStep, MABCore, RolloutStopped
from fedbandit_env.core.routing import Routed, Router, inbox

__all__ = ["CoreStep", "LinearCore", "MABCore", "RolloutStopped", "Routed", "Router", "inbox"]
