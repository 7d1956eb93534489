"""A day as a bound of an hourly job: ``--start 2024-03-31`` is that day's first hour,
``--end 2024-03-31`` its last, in the definition's time zone.

Hourly keys are ``YYYY-MM-DDTHH``; asking for "the 31st" is natural, and a day's hours
are not always 00..23 (a DST day has 23 or 25 hours, a few zones skip midnight), so the
bound is found from the instants: the first hour is the key of the day's first instant,
the last the key of the instant just before the next day begins. A day that starts
before the definition's ``start_date`` (or ends after its ``end_date``) is clamped to
it, so ``--start`` of the first day means the first key.
"""

from __future__ import annotations

import re
from typing import Literal

from whenever import Date, PlainDateTime

from ...backfill.base import BackfillDef
from ...backfill.time_backfill import TimeBackfill

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def hourly_day_bound(
    backfill: BackfillDef, bound: str | None, side: Literal["start", "end"]
) -> str | None:
    """``bound`` as an hourly key when it is a day (``YYYY-MM-DD``) of an hourly
    definition; otherwise ``bound`` unchanged (so a malformed one meets the usual error).

    Example:
        >>> from databricks_bundle_decorators.backfill import HourlyBackfill
        >>> berlin = HourlyBackfill("2024-03-30T00", "2024-04-30T23", tz="Europe/Berlin")
        >>> [hourly_day_bound(berlin, "2024-03-31", side) for side in ("start", "end")]
        ['2024-03-31T00', '2024-03-31T23']
        >>> hourly_day_bound(berlin, "2024-03-31T05", "start")
        '2024-03-31T05'
    """
    if bound is None or not isinstance(backfill, TimeBackfill) or backfill.kind != "hourly":
        return bound
    if _DAY.fullmatch(bound) is None:
        return bound
    try:
        day = Date.parse_iso(bound)
    except ValueError:
        return bound
    if side == "start":
        first = PlainDateTime(day.year, day.month, day.day).assume_tz(
            backfill.tz,
            disambiguation="compatible",  # a skipped midnight: the day's first instant
        )
        key = backfill.key_of(first.to_instant())
        limit: str | None = backfill.start_date
        if limit is not None and backfill.compare(key, limit) < 0 and limit[:10] == bound:
            key = limit
        return key
    after = day.add(days=1)
    next_day = PlainDateTime(after.year, after.month, after.day).assume_tz(
        backfill.tz, disambiguation="compatible"
    )
    key = backfill.key_of(next_day.to_instant().subtract(microseconds=1))
    limit = backfill.end_date
    if limit is None:
        limit = backfill.current_key()  # an open end: the current key, as the plan's
    if backfill.compare(key, limit) > 0 and limit[:10] == bound:
        key = limit
    return key
