"""Public module: per-slice checks for ``@task(checks=[...])``."""

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
    "Expect",
    "FrameCheck",
    "MaxNullFraction",
    "MinRowCount",
    "RowCountWithin",
    "Unique",
]
