"""Which keys a triggered job still owes after a backfill ran some of them.

A table-triggered job processes, for each source commit after its watermark, the output
keys the commit's changed source keys affect (widened by lookback,
:func:`.changed_keys.affected_keys`). While a backfill paused the trigger, the backfill
itself ran some of those keys, each against its sources as of a version it recorded
(:class:`Coverage`). A change at version ``v`` needs key ``K`` again unless a coverage
holds ``K`` at a version ``>= v`` of that source: the run read the change.

Pure: no I/O, no clock (the current key is given).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .changed_keys import affected_keys
from .time_backfill import TimeBackfill


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
