"""Which keys a data-driven run writes: each changed source key S schedules the output keys
``S .. min(S+N, current key)`` (``lookback=N``: key K reads K-N..K), ``max_keys`` takes the oldest;
keys a backfill ran while it paused a trigger are owed only for later changes (:class:`Coverage`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

    from .base import BackfillDef
    from .time_backfill import TimeBackfill


@dataclass(frozen=True, slots=True)
class KeyPlan:
    """The keys one run writes, and those left for later runs (both sorted, disjoint)."""

    run: tuple[str, ...]
    pending: tuple[str, ...]


def affected_keys(backfill: TimeBackfill, changed: Iterable[str], current: str) -> list[str]:
    """Output keys affected by changes to source keys ``changed``, from ``start_date`` on.

    Example:
        >>> from databricks_bundle_decorators.backfill import DailyBackfill
        >>> daily = DailyBackfill("2024-01-01", lookback=2)
        >>> affected_keys(daily, ["2024-01-05", "2024-01-09"], "2024-01-10")
        ['2024-01-05', '2024-01-06', '2024-01-07', '2024-01-09', '2024-01-10']
    """
    found: set[str] = set()
    for key in set(changed):
        if not _in_bounds(backfill, key):
            continue
        last = backfill.shift_key(key, backfill.lookback)
        if backfill.compare(last, current) > 0:
            last = key if backfill.compare(key, current) > 0 else current
        found.update(key_span(backfill, key, last))
    return backfill.sort_keys(list(found))


def plan_keys(backfill: TimeBackfill, keys: Iterable[str], max_keys: int | None) -> KeyPlan:
    """``keys`` split into this run's (the oldest ``max_keys``) and the pending rest."""
    ordered = backfill.sort_keys(list(keys))
    if max_keys is None or len(ordered) <= max_keys:
        return KeyPlan(tuple(ordered), ())
    return KeyPlan(tuple(ordered[:max_keys]), tuple(ordered[max_keys:]))


def missing_since(backfill: TimeBackfill, present: Iterable[str], current: str) -> list[str]:
    """The keys after the last present key up to ``current`` (only ``current`` with none).

    Example:
        >>> from databricks_bundle_decorators.backfill import DailyBackfill
        >>> missing_since(DailyBackfill("2024-01-01"), ["2024-01-03", "2024-01-05"],
        ...               "2024-01-09")
        ['2024-01-06', '2024-01-07', '2024-01-08', '2024-01-09']
    """
    done = [k for k in present if backfill.compare(k, current) <= 0]
    if not done:
        return [current]
    last = backfill.sort_keys(done)[-1]
    if backfill.compare(last, current) >= 0:
        return [current]
    return key_span(backfill, backfill.shift_key(last, 1), current)


def catch_up_plan(
    backfill: TimeBackfill, done: Iterable[str], now: datetime, max_keys: int | None
) -> KeyPlan:
    """The keys of a catching-up run at ``now``: after the last of ``done`` up to the current
    key, the oldest ``max_keys`` now and the rest pending.

    Example:
        >>> from datetime import datetime, timezone
        >>> from databricks_bundle_decorators.backfill import MonthlyBackfill
        >>> catch_up_plan(MonthlyBackfill("2024-01-01"), ["2024-11-01"],
        ...               datetime(2025, 2, 15, tzinfo=timezone.utc), 2)
        KeyPlan(run=('2024-12-01', '2025-01-01'), pending=('2025-02-01',))
    """
    current = backfill.current_key(now=now)
    return plan_keys(backfill, missing_since(backfill, done, current), max_keys)


def with_lookback(backfill: TimeBackfill, keys: Iterable[str]) -> tuple[str, ...]:
    """``keys`` and the keys their lookback reads, sorted (what a run over ``keys`` reads)."""
    reads: set[str] = set(keys)
    for key in list(reads):
        reads.update(backfill.previous_keys(key, backfill.lookback))
    return tuple(backfill.sort_keys(list(reads)))


def _in_bounds(backfill: BackfillDef, key: str) -> bool:
    try:
        backfill.validate_key(key)
    except ValueError:
        return False
    return True


def key_span(backfill: TimeBackfill, first: str, last: str) -> list[str]:
    """The existing keys from ``first`` to ``last`` inclusive, within ``start_date`` and a closed
    ``end_date`` (cut to them first: a year of lookback over yesterday's job walks a day)."""
    if backfill.compare(first, backfill.start_date) < 0:
        first = backfill.start_date
    end = backfill.end_date
    if end is not None and backfill.compare(last, end) > 0:
        last = end
    keys: list[str] = []
    key = first
    while backfill.compare(key, last) <= 0:
        if _in_bounds(backfill, key):
            keys.append(key)
        key = backfill.shift_key(key, 1)
    return keys


@dataclass(frozen=True, slots=True)
class Change:
    """Source ``source`` changed the rows of its key ``key`` in its version ``version``."""

    source: str
    version: int
    key: str


@dataclass(frozen=True, slots=True)
class Coverage:
    """A run processed ``keys`` reading each source at least at ``versions[source]``."""

    keys: frozenset[str]
    versions: Mapping[str, int]

    def covers(self, key: str, source: str, version: int) -> bool:
        return key in self.keys and self.versions.get(source, -1) >= version


def uncovered_keys(
    backfill: TimeBackfill,
    changes: Iterable[Change],
    coverages: Iterable[Coverage],
    *,
    pending: Iterable[str] = (),
    watermark: Mapping[str, int] | None = None,
    current: str,
) -> list[str]:
    """The keys a triggered run would process for ``changes`` and the ``pending`` keys,
    minus those a coverage already processed, oldest first.

    A pending key was changed at a version up to ``watermark`` (the versions the
    pending list was recorded at): a coverage at or after all of them covers it.

    Example:
        >>> from databricks_bundle_decorators.backfill import DailyBackfill
        >>> daily = DailyBackfill("2024-01-01", lookback=1)
        >>> ran = Coverage(frozenset({"2024-01-03", "2024-01-04"}), {"a": 2})
        >>> uncovered_keys(daily, [Change("a", 2, "2024-01-03"), Change("a", 3, "2024-01-06")],
        ...                [ran], current="2024-01-10")
        ['2024-01-06', '2024-01-07']
    """
    covered = list(coverages)
    owed: set[str] = set()
    for change in changes:
        for key in affected_keys(backfill, [change.key], current):
            if not any(c.covers(key, change.source, change.version) for c in covered):
                owed.add(key)
    marks = dict(watermark or {})
    for key in pending:
        if not any(
            key in c.keys and all(c.versions.get(s, -1) >= v for s, v in marks.items())
            for c in covered
        ):
            owed.add(key)
    return backfill.sort_keys(list(owed))
