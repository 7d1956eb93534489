"""Public module: per-slice checks for ``@task(checks=[...])``, and the aggregates a
table declares for the diff gate (``SparkTableIoManager(..., gate=[Sum("amount")])``)."""

from .runtime.checks.gate_aggregates import CountDistinct, GateAggregate, Mean, Sum
from .runtime.checks.shipped import (
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
    "CountDistinct",
    "Expect",
    "FrameCheck",
    "GateAggregate",
    "MaxNullFraction",
    "Mean",
    "MinRowCount",
    "RowCountWithin",
    "Sum",
    "Unique",
]
