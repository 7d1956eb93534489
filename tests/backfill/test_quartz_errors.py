"""QuartzSchedule refuses bad input with the field at fault named."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from databricks_bundle_decorators.backfill.quartz import QuartzSchedule

UTC = timezone.utc
BERLIN = ZoneInfo("Europe/Berlin")


# --------------------------------------------------------------------------- errors

BAD = [
    ("60 0 0 * * ?", "second field '60' out of range 0-59"),
    ("0 60 0 * * ?", "minute field '60' out of range 0-59"),
    ("0 0 25 * * ?", "hour field '25' out of range 0-23"),
    ("0 0 0 32 * ?", "day-of-month field '32' out of range 1-31"),
    ("0 0 0 0 * ?", "day-of-month field '0' out of range"),
    ("0 0 0 L-31 * ?", "day-of-month field 'L-31'"),
    ("0 0 0 32W * ?", "day-of-month field '32W'"),
    ("0 0 0 1,L * ?", "day-of-month field '1,L'"),
    ("0 0 0 1-5W * ?", "day-of-month field '1-5W'"),
    ("0 0 0 ? 13 *", "month field '13' out of range 1-12"),
    ("0 0 0 ? FOO *", "month field 'FOO'"),
    ("0 0 0 ? * 0", "day-of-week field '0' out of range 1-7"),
    ("0 0 0 ? * 8", "day-of-week field '8' out of range 1-7"),
    ("0 0 0 ? * MON#6", "day-of-week field 'MON#6'"),
    ("0 0 0 ? * 8L", "day-of-week field '8L'"),
    ("0 0 0 ? * 1,2#1", "day-of-week field '1,2#1'"),
    ("0 0 0 ? * MON-FRY", "day-of-week field 'MON-FRY'"),
    ("0 0 0 1 * ? 1969", "year field '1969' out of range 1970-2199"),
    ("0 0 0 1 * ? 2200", "year field '2200'"),
    ("0 0 0 1 * ? 2030-2020", "year field '2030-2020'"),
    ("0 */0 0 * * ?", "minute field '*/0'"),
    ("0 0 */24 * * ?", "hour field '*/24'"),
    ("0 0 ? * * ?", "hour field '?'"),
    ("0 0 0 1-* * ?", "day-of-month field '1-*'"),
    ("0 0 0 1,,2 * ?", "day-of-month field '1,,2'"),
    ("0 0 0 ? * ?", "day-of-month and day-of-week cannot both be '?'"),
    ("0 0 0 1 * MON", "both day-of-month and day-of-week"),
    ("0 0 0 * * *", "both day-of-month and day-of-week"),
    ("0 0 * * *", "expected 6 or 7 fields"),
    ("0 0 0 * * ? 2024 x", "expected 6 or 7 fields"),
    ("", "expected 6 or 7 fields"),
]


@pytest.mark.parametrize(("expression", "message"), BAD, ids=[b[1] for b in BAD])
def test_invalid_expressions_name_the_field(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match="invalid Quartz cron") as excinfo:
        QuartzSchedule(expression)
    assert message in str(excinfo.value)
    assert repr(expression) in str(excinfo.value)


def test_unknown_timezone() -> None:
    for name in ("Mars/Base", "", "America", "../etc"):
        with pytest.raises(ValueError, match=r"unknown timezone"):
            QuartzSchedule("0 0 0 * * ?", name)
    with pytest.raises(ValueError, match=r"unknown timezone 'Mars/Base'"):
        QuartzSchedule("0 0 0 * * ?", "Mars/Base")


def test_naive_datetimes_are_rejected() -> None:
    schedule = QuartzSchedule("0 0 0 * * ?")
    naive = datetime(2024, 1, 1)
    call: Callable[[datetime], object]
    for call in (schedule.next_fire, schedule.previous_fire, schedule.matches):
        with pytest.raises(ValueError, match="must be timezone-aware"):
            call(naive)
