"""Per-slice checks: the checks dbxdec ships (``shipped``, re-exported here so
``databricks_bundle_decorators.runtime.checks`` keeps its names), measuring an output in
few Spark jobs (``metering``), judging a task's checks (``checking``), baselines of
committed keys (``baselines``, ``keyed_table``), quarantined rows (``quarantine``), the
check results table (``check_results``) and the aggregates a diff gate compares
(``gate_aggregates``). May import :mod:`..core`, :mod:`..session` and
:mod:`..storage` and the layers above ``runtime``; the IoManagers (:mod:`..io`) call the
checks, so no check imports an IoManager.
"""

from .shipped import (
    Check,
    Expect,
    FrameCheck,
    MaxNullFraction,
    MinRowCount,
    RowCountWithin,
    Unique,
)

__all__ = [
    "Check",
    "Expect",
    "FrameCheck",
    "MaxNullFraction",
    "MinRowCount",
    "RowCountWithin",
    "Unique",
]
