"""The run context: what a running task knows about its job run (filled by the runtime; tests
set it with :func:`run_context`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING

from .base import BackfillDef

# The parameter names live in the wire contract; re-exported for existing imports.
from .wire import BACKFILL_EXACT_PARAM as BACKFILL_EXACT_PARAM
from .wire import BACKFILL_KEY_PARAM as BACKFILL_KEY_PARAM
from .wire import BACKFILL_PARAMS as BACKFILL_PARAMS
from .wire import BACKFILL_START_KEY_PARAM as BACKFILL_START_KEY_PARAM

if TYPE_CHECKING:
    from .quartz import QuartzSchedule


@dataclass(frozen=True, slots=True)
class ResolvedKeys:
    """The keys of one run: ``primary`` (its ``backfill_key``, given or derived), ``keys`` (all
    it processes, sorted), ``written`` (``keys`` minus lookback-only keys) and whether
    ``primary`` was ``auto_derived`` from the clock.
    """

    primary: str
    keys: tuple[str, ...]
    written: tuple[str, ...]
    auto_derived: bool


_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"", "false", "0", "no"})


def parse_flag(value: str, *, name: str) -> bool:
    """Parse a boolean job parameter (``"true"``/``"false"``, case-insensitive)."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"job parameter {name}={value!r} is not a boolean: expected 'true' or 'false'")


@dataclass(frozen=True, slots=True)
class RunContext:
    """Everything key resolution needs about the current run.

    Args:
        job_name: The job being run.
        task_key: The task being run, if any.
        params: Job parameters as strings (``backfill_key`` and friends included).
        backfill: The job's backfill definition, if it has one.
        schedule: The job's Quartz schedule, if it has one (for schedule gaps).
        now: The run's logical time, pinned once where the run starts (the trigger
            time on Databricks, the start of a local run); ``None`` reads the wall clock
            (only for code outside a run, e.g. tests of key rules).
        resolved: The run's keys, resolved once from the above when the run started;
            every helper inside the run returns these instead of resolving again.
    """

    job_name: str | None = None
    task_key: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    backfill: BackfillDef | None = None
    schedule: QuartzSchedule | None = None
    now: datetime | None = None
    resolved: ResolvedKeys | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def param(self, name: str, default: str = "") -> str:
        """A job parameter's value, or ``default`` when absent."""
        return self.params.get(name, default)


_CURRENT: ContextVar[RunContext | None] = ContextVar("dbxdec_run_context", default=None)


@contextmanager
def run_context(context: RunContext) -> Iterator[RunContext]:
    """Make ``context`` the current run context inside the ``with`` block."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)


def current_run_context() -> RunContext | None:
    """The current run context, or ``None`` outside a run."""
    return _CURRENT.get()
