"""Run (scenario, policy, seed) grids and turn them into tables and plots."""

from fedbandit_env.runner.plot import plot_regret, plot_results, plot_summary
from fedbandit_env.runner.results import (
    CSV_COLUMNS,
    format_table,
    markdown_table,
    read_csv,
    summary_rows,
    tidy_columns,
    write_config,
    write_csv,
    write_parquet,
)
from fedbandit_env.runner.rollout import RegretCurves, rollout, run_trials
from fedbandit_env.scenario.trial import record_steps

__all__ = [
    "CSV_COLUMNS",
    "RegretCurves",
    "format_table",
    "markdown_table",
    "plot_regret",
    "plot_results",
    "plot_summary",
    "read_csv",
    "record_steps",
    "rollout",
    "run_trials",
    "summary_rows",
    "tidy_columns",
    "write_config",
    "write_csv",
    "write_parquet",
]
