"""The federated bandit written once, in batched form (``B`` envs x ``N`` agents).

- :class:`MABCore`: the arrays of ``B`` episodes; the PettingZoo env
  (:class:`~fedbandit_env.envs.federated_mab.FederatedMABEnv`) is its one-env view;
- :class:`FederatedMABVecEnv`: the Gymnasium vector env over it;
- :class:`FederatedLinearVecEnv`: the linear bandit's vector env, over
  :class:`~fedbandit_env.core.linear.LinearCore` (whose one-env view is the PettingZoo
  linear env);
- :func:`make_vec`: the vector counterpart of ``scenario.make_env(needs)``;
- :func:`inbox`: the per-receiver messages (the PettingZoo form) of a batched delivery.

Examples:
    >>> from fedbandit_env.scenario.scenario import Scenario
    >>> venv = make_vec(Scenario(n_agents=4, n_arms=3, horizon=10, setting="local"), 16)
    >>> obs, infos = venv.reset(seed=0)
    >>> obs["arm"].shape, sorted(obs)
    ((16, 4), ['arm', 'reward', 'step'])
"""

from fedbandit_env.core.mab import MABCore
from fedbandit_env.core.routing import Routed, inbox
from fedbandit_env.vector.env import FederatedMABVecEnv, joint_spaces
from fedbandit_env.vector.linear import FederatedLinearVecEnv
from fedbandit_env.vector.make import make_vec

__all__ = ["FederatedLinearVecEnv", "FederatedMABVecEnv", "MABCore", "Routed", "inbox",
           "joint_spaces", "make_vec"]  # fmt: skip
