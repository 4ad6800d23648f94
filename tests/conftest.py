"""Shared fixtures."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
