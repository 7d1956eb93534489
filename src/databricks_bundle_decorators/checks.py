"""Public module: per-slice checks for ``@task(checks=[...])`` (the shipped ones, and
:class:`UserCheck`, the protocol a check of your own implements), and the aggregates a
table declares for the diff gate (``SparkTableIoManager(..., gate=[Sum("amount")])``)."""

from .definitions.contracts import UserCheck
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
    "UserCheck",
]
