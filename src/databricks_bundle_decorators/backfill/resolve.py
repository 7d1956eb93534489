"""Runtime key resolution: which keys does this run process (rules: :func:`resolve_keys`)."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from whenever import Instant

from .base import BackfillDef
from .context import (
    BACKFILL_EXACT_PARAM,
    BACKFILL_KEY_PARAM,
    BACKFILL_START_KEY_PARAM,
    ResolvedKeys,
    RunContext,
    current_run_context,
    parse_flag,
)
from .multi import SEPARATOR, MultiBackfill
from .time_backfill import TimeBackfill, to_instant

_logger = logging.getLogger("databricks_bundle_decorators.backfill")


def _require_context() -> RunContext:
    context = current_run_context()
    if context is None:
        raise RuntimeError(
            "no run context: backfill keys are only known inside a task run "
            "(dbxdec-run on Databricks, or the local runner)"
        )
    return context


def resolve_primary_key(context: RunContext, *, validate: bool = True) -> tuple[str, bool]:
    """The run's primary key and whether it was derived from the clock."""
    raw = context.param(BACKFILL_KEY_PARAM)
    backfill = context.backfill
    auto_derived = False
    if not raw:
        derived = backfill.current_key(now=context.now) if backfill is not None else None
        if derived is None:
            reason = (
                "the job has no backfill definition"
                if backfill is None
                else f"a {backfill.kind} backfill has no default key"
            )
            raise RuntimeError(
                f"job parameter {BACKFILL_KEY_PARAM!r} is empty and no key can be derived: "
                f"{reason}. Pass --key / backfill_key=..."
            )
        _logger.warning(
            "%s is empty for job %r; derived %r from the current time (%s backfill)",
            BACKFILL_KEY_PARAM,
            context.job_name,
            derived,
            backfill.kind if backfill is not None else "no",
        )
        raw, auto_derived = derived, True
    if validate and backfill is not None:
        backfill.validate_key(raw, what=BACKFILL_KEY_PARAM)
    return raw, auto_derived


def resolve_keys(context: RunContext, *, validate: bool = True) -> ResolvedKeys:
    """Every key a run processes.

    An empty ``backfill_key`` is derived from the run's clock (``context.now``, else the wall
    clock) for a time definition; ``backfill_start_key`` makes a ranged run; ``lookback=N``
    adds the N keys before the run's own first key (never before ``start_date``);
    ``collect_schedule_gaps`` adds keys ``k`` with ``key(previous fire) < k <= current`` for
    auto-derived keys; ``backfill_exact=true`` bypasses both. The result is the sorted union.
    """
    if context.now is None:
        context = replace(context, now=datetime.now(timezone.utc))
    backfill = context.backfill
    if isinstance(backfill, MultiBackfill) and not context.param(BACKFILL_KEY_PARAM):
        own = backfill.current_keys(now=context.now)
        primary, auto_derived = own[0], True
        _logger.warning(
            "%s is empty for job %r; derived the current %s key of every static value: %s",
            BACKFILL_KEY_PARAM,
            context.job_name,
            backfill.time.kind,
            own,
        )
    else:
        primary, auto_derived = resolve_primary_key(context, validate=validate)
        if backfill is None:
            return ResolvedKeys(primary, (primary,), (primary,), auto_derived)
        own = _ranged_keys(context, backfill, primary, validate=validate)
    exact = parse_flag(context.param(BACKFILL_EXACT_PARAM), name=BACKFILL_EXACT_PARAM)
    time = backfill.time if isinstance(backfill, MultiBackfill) else backfill
    if exact or not isinstance(time, TimeBackfill):
        return ResolvedKeys(primary, tuple(own), tuple(own), auto_derived)

    # A two-dimensional job applies the time rules within each static value.
    statics = backfill.static.declared_keys if isinstance(backfill, MultiBackfill) else None
    written = list(own)
    if time.collect_schedule_gaps and auto_derived and context.schedule is not None:
        gaps = schedule_gap_keys(time, context, time.current_key(now=context.now))
        if statics is not None:
            gaps = [f"{s}{SEPARATOR}{t}" for s in statics for t in gaps]
        written += gaps
    extra: list[str] = []
    if time.lookback and isinstance(backfill, MultiBackfill):
        for static, times in backfill.by_static(own).items():
            first = min(times, key=time.cadence.parse)
            extra += backfill.previous_keys(f"{static}{SEPARATOR}{first}", time.lookback)
    elif time.lookback:
        extra = time.previous_keys(own[0], time.lookback)
    keys = backfill.sort_keys([*extra, *written])
    if len(keys) > 1 and statics is None:
        _logger.info(
            "expanded %s=%r to %d keys (lookback=%d, collect_schedule_gaps=%s): %s",
            BACKFILL_KEY_PARAM,
            primary,
            len(keys),
            time.lookback,
            time.collect_schedule_gaps,
            keys,
        )
    return ResolvedKeys(primary, tuple(keys), tuple(backfill.sort_keys(written)), auto_derived)


def _ranged_keys(
    context: RunContext, backfill: BackfillDef, primary: str, *, validate: bool
) -> list[str]:
    """``[primary]``, or the keys from ``backfill_start_key`` to ``primary``."""
    start_key = context.param(BACKFILL_START_KEY_PARAM)
    if not start_key:
        return [primary]
    if validate:
        backfill.validate_key(start_key, what=BACKFILL_START_KEY_PARAM)
    keys = backfill.keys(start_key, primary, now=context.now)
    if not keys:
        raise ValueError(
            f"{BACKFILL_START_KEY_PARAM} {start_key!r} is after {BACKFILL_KEY_PARAM} {primary!r}"
        )
    return keys


def schedule_gap_keys(backfill: TimeBackfill, context: RunContext, current: str) -> list[str]:
    """Keys ``k`` with ``key(previous fire) < k <= current``, within ``start_date``: a Mon-Fri
    schedule's Monday run collects Sat, Sun, Mon.
    """
    schedule = context.schedule
    if schedule is None:
        return [current]
    now = to_instant(context.now) if context.now is not None else Instant.now()
    at_or_before = now.to_stdlib() + timedelta(microseconds=1)
    trigger = schedule.previous_fire(at_or_before.astimezone(timezone.utc))
    previous = schedule.previous_fire(trigger) if trigger is not None else None
    if previous is None:
        return [current]
    previous_key = backfill.current_key(now=previous)
    keys: list[str] = []
    key = current
    while backfill.compare(key, previous_key) > 0:
        keys.append(key)
        earlier = backfill.previous_keys(key, 1)
        if not earlier:
            break
        key = earlier[0]
    keys.reverse()
    return keys or [current]


def run_keys_of(context: RunContext, *, validate: bool = True) -> ResolvedKeys:
    """The run's keys: those resolved once when the run started, else resolved now."""
    return (
        context.resolved
        if context.resolved is not None
        else resolve_keys(context, validate=validate)
    )


def get_backfill_key(*, validate: bool = True) -> str:
    """Return the raw backfill key for the current job run.

    Reads the ``backfill_key`` job parameter; when it is empty and the job has a time-based
    backfill, derives it from the run's time (``current_key()``) and logs a warning.

    Args:
        validate: Check the key against the job's backfill definition.

    Returns:
        The key string.

    Raises:
        RuntimeError: the key is empty and none can be derived, or called outside a run.
        ValueError: ``validate`` is true and the key is malformed or out of bounds.
    """
    context = _require_context()
    if context.resolved is not None:
        return context.resolved.primary
    return resolve_primary_key(context, validate=validate)[0]


def get_backfill_keys(*, validate: bool = True) -> list[str]:
    """Return all keys of the current run, sorted ascending.

    ``[get_backfill_key()]`` plus: the range from ``backfill_start_key``, ``lookback``
    keys before the first key, and schedule gaps for auto-derived keys;
    ``backfill_exact=true`` disables lookback and gaps.

    Example:
        With ``DailyBackfill("2026-01-01", lookback=2)`` and ``backfill_key=2026-01-08``
        (a run context set by hand, as the runtime sets it for a task run):

        >>> from databricks_bundle_decorators import DailyBackfill
        >>> from databricks_bundle_decorators.backfill.context import RunContext, run_context
        >>> context = RunContext(params={"backfill_key": "2026-01-08"},
        ...                      backfill=DailyBackfill("2026-01-01", lookback=2),
        ...                      now=datetime(2026, 1, 9, 6, tzinfo=timezone.utc))
        >>> with run_context(context):
        ...     get_backfill_keys()
        ['2026-01-06', '2026-01-07', '2026-01-08']

    Raises:
        RuntimeError: as :func:`get_backfill_key`.
        ValueError: as :func:`get_backfill_key`, or a malformed ``backfill_exact``.
    """
    return list(run_keys_of(_require_context(), validate=validate).keys)


def get_static_keys(*, validate: bool = True) -> list[str]:
    """Return the static values of the current run's keys, sorted, for a job with
    ``backfill=MultiBackfill(...)`` (e.g. the regions of a region x day run).

    Example:
        >>> from databricks_bundle_decorators import DailyBackfill, MultiBackfill, StaticBackfill
        >>> from databricks_bundle_decorators.backfill.context import RunContext, run_context
        >>> regions = MultiBackfill(StaticBackfill(["eu", "us"]), DailyBackfill("2026-01-01"))
        >>> context = RunContext(params={"backfill_key": "us:2026-01-08"}, backfill=regions,
        ...                      now=datetime(2026, 1, 9, 6, tzinfo=timezone.utc))
        >>> with run_context(context):
        ...     get_static_keys()
        ['us']

    Raises:
        RuntimeError: as :func:`get_backfill_key`, or the job has no static dimension.
        ValueError: as :func:`get_backfill_keys`.
    """
    from .multi import MultiBackfill, split_key

    context = _require_context()
    if not isinstance(context.backfill, MultiBackfill):
        raise RuntimeError(
            "get_static_keys(): the job has no static dimension (it is for jobs with "
            "backfill=MultiBackfill(...)); use get_backfill_keys()"
        )
    keys = run_keys_of(context, validate=validate).keys
    return sorted({split_key(key).static for key in keys})


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_ISO_HOUR = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}", re.ASCII)
_ISO_WEEK = re.compile(r"\d{4}-W\d{2}", re.ASCII)


def logical_date_of(key: str, backfill: BackfillDef | None) -> datetime:
    """A key as a timezone-aware ``datetime``: the start of its window.

    Raises:
        ValueError: the key is not a date or time key.
    """
    if isinstance(backfill, TimeBackfill):
        return backfill.key_start(key).to_stdlib()
    try:
        if _ISO_DATE.fullmatch(key):
            return datetime.fromisoformat(key).replace(tzinfo=timezone.utc)
        if _ISO_HOUR.fullmatch(key):
            return datetime.fromisoformat(f"{key}:00").replace(tzinfo=timezone.utc)
        if _ISO_WEEK.fullmatch(key):
            return datetime.strptime(f"{key}-1", "%G-W%V-%u").replace(tzinfo=timezone.utc)
        parsed = datetime.fromisoformat(key)
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise ValueError(
            f"backfill_key {key!r} cannot be read as a date: expected YYYY-MM-DD, YYYY-Www, "
            "YYYY-MM-DDTHH or an ISO-8601 datetime with offset (use get_backfill_key() "
            "for static keys)"
        )
    return parsed


def get_run_logical_date(*, validate: bool = True) -> datetime:
    """Return the backfill key as a timezone-aware ``datetime`` (its window's start).

    In the definition's time zone; in a repeated hour, the first occurrence (compare by
    ``timestamp()``: ``==`` across zones is false for ambiguous wall times, PEP 495).

    Raises:
        RuntimeError: the key is empty and cannot be derived.
        ValueError: the key is not a date/time key, or out of bounds when ``validate``.
    """
    key = get_backfill_key(validate=validate)
    return logical_date_of(key, _require_context().backfill)
