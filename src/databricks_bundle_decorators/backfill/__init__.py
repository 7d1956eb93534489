"""Backfill definitions, key windows, Quartz schedules and runtime key resolution.

This layer is pure: values and arithmetic, no I/O, no imports from other layers.
"""

from .base import BackfillDef, TimeWindow
from .context import (
    BACKFILL_EXACT_PARAM,
    BACKFILL_KEY_PARAM,
    BACKFILL_PARAMS,
    BACKFILL_START_KEY_PARAM,
    ResolvedKeys,
    RunContext,
    current_run_context,
    run_context,
)
from .deadline import Deadline, DeadlineMonitor, KeyDeadlines
from .multi import MultiBackfill
from .quartz import QuartzSchedule
from .resolve import (
    get_backfill_key,
    get_backfill_keys,
    get_run_logical_date,
    get_static_keys,
    resolve_keys,
    run_keys_of,
)
from .static import StaticBackfill
from .time_backfill import (
    CatchUp,
    DailyBackfill,
    HourlyBackfill,
    MonthlyBackfill,
    TimeBackfill,
    WeeklyBackfill,
)

__all__ = [
    "BACKFILL_EXACT_PARAM",
    "BACKFILL_KEY_PARAM",
    "BACKFILL_PARAMS",
    "BACKFILL_START_KEY_PARAM",
    "BackfillDef",
    "CatchUp",
    "DailyBackfill",
    "Deadline",
    "DeadlineMonitor",
    "HourlyBackfill",
    "KeyDeadlines",
    "MonthlyBackfill",
    "MultiBackfill",
    "QuartzSchedule",
    "ResolvedKeys",
    "RunContext",
    "StaticBackfill",
    "TimeBackfill",
    "TimeWindow",
    "WeeklyBackfill",
    "current_run_context",
    "get_backfill_key",
    "get_backfill_keys",
    "get_run_logical_date",
    "get_static_keys",
    "resolve_keys",
    "run_context",
    "run_keys_of",
]
