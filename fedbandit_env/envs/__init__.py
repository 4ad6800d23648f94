"""Environment implementations; import the versioned modules (``federated_mab_v0``) instead.

The shared parts of a bandit env sit beside the env: its spaces and global state
(``spaces.py``), its action parsing (``actions.py``) and its text view (``render.py``).

Extension points (how later envs fit without redesign): a contextual env adds a
``contexts`` key (the per-step decision set, ``(K, d)``) to the observation and keeps the
same action/message layout; server and hybrid topologies are protocols (a server is a
router that aggregates, with ``server_links`` counted), not new envs.
"""

from fedbandit_env.envs.federated_mab import FederatedMABEnv

__all__ = ["FederatedMABEnv"]
