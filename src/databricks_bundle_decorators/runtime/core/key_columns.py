"""A Spark column of backfill keys: a timestamp column formatted as a definition's keys,
in its time zone, whatever the session's time zone (the zone's wall clock is computed as
epoch arithmetic). A repeated local hour maps to its one key, as the windows do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...backfill.base import BackfillDef
from ...backfill.time_backfill import TimeBackfill

if TYPE_CHECKING:
    from pyspark.sql import Column

_SECONDS_PER_DAY = 86400


def backfill_key_column(column: Column | str, definition: BackfillDef) -> Column:
    """The backfill key of each row's timestamp, as a string column.

    Args:
        column: A ``TIMESTAMP`` column (an instant), or its name.
        definition: A daily, hourly, weekly or monthly backfill definition.

    Returns:
        A string column of keys in ``definition``'s format and time zone (``NULL``
        where the timestamp is ``NULL``).

    Raises:
        ValueError: ``definition`` is not time-based (static keys have no instants).

    Example:
        ``df.withColumn("hour", backfill_key_column("event_ts", HourlyBackfill(...)))``
    """
    from pyspark.sql import functions as F

    if not isinstance(definition, TimeBackfill):
        raise ValueError(
            f"backfill_key_column needs a time-based definition (daily, hourly, weekly, "
            f"monthly), not a {definition.kind} one: its keys have no instants"
        )
    instant = F.col(column) if isinstance(column, str) else column
    # from_utc_timestamp renders an instant as the zone's wall time:
    # https://docs.databricks.com/en/sql/language-manual/functions/from_utc_timestamp.html
    wall = F.floor(F.from_utc_timestamp(instant, definition.tz).cast("double"))
    day_number = F.floor(wall / _SECONDS_PER_DAY)
    day = F.date_from_unix_date(day_number.cast("int"))
    kind = definition.kind
    if kind == "daily":
        return F.date_format(day, "yyyy-MM-dd")
    if kind == "hourly":
        hour = F.floor((wall - day_number * _SECONDS_PER_DAY) / 3600).cast("int")
        return F.concat(
            F.date_format(day, "yyyy-MM-dd"), F.lit("T"), F.lpad(hour.cast("string"), 2, "0")
        )
    if kind == "monthly":
        return F.concat(F.date_format(day, "yyyy-MM"), F.lit("-01"))
    # ISO week: the week's Thursday decides its year; weekofyear "starts on a Monday and
    # week 1 is the first week with >3 days" (ISO 8601):
    # https://docs.databricks.com/en/sql/language-manual/functions/weekofyear.html
    iso_weekday = (F.dayofweek(day) + 5) % 7 + 1  # Monday 1 .. Sunday 7
    thursday = F.date_add(day, (F.lit(4) - iso_weekday).cast("int"))
    week = F.lpad(F.weekofyear(day).cast("string"), 2, "0")
    return F.concat(F.year(thursday).cast("string"), F.lit("-W"), week)
