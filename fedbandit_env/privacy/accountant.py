"""Privacy accounting by basic composition."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PrivacyAccountant:
    """Adds up the ``(epsilon, delta)`` of every release (basic sequential composition).

    Pure-DP mechanisms spend ``delta = 0``. The tree mechanism spends one per-level
    ``epsilon'`` each time the stream grows into a new tree level (see
    :meth:`~fedbandit_env.privacy.TreeMechanism.epsilon_spent`).

    Attributes:
        budget: Optional ``epsilon`` cap; :meth:`spend` raises past it.

    Examples:
        >>> acc = PrivacyAccountant(budget=1.0)
        >>> acc.spend(0.25); acc.spend(0.5, delta=1e-6)
        >>> acc.epsilon, acc.delta, acc.releases
        (0.75, 1e-06, 2)
    """

    budget: float | None = None
    epsilon: float = 0.0
    delta: float = 0.0
    releases: int = 0
    history: list[tuple[float, float]] = field(default_factory=list, repr=False)

    def spend(self, epsilon: float, delta: float = 0.0) -> None:
        """Record one release; raise ``ValueError`` if the budget would be exceeded."""
        if epsilon < 0 or delta < 0:
            raise ValueError(f"epsilon and delta must be >= 0, got {epsilon}, {delta}")
        if self.budget is not None and self.epsilon + epsilon > self.budget * (1 + 1e-12):
            raise ValueError(
                f"privacy budget exceeded: spent {self.epsilon} + {epsilon} > {self.budget}"
            )
        self.epsilon += epsilon
        self.delta += delta
        self.releases += 1
        self.history.append((epsilon, delta))

    def reset(self) -> None:
        """Forget every release."""
        self.epsilon, self.delta, self.releases = 0.0, 0.0, 0
        self.history.clear()
