"""Freshness deadlines: the due time of hourly, daily and monthly keys across Amsterdam's
2024 clock changes, a fixed clock for "due before now" (hourly, daily, monthly),
definition-time refusals, and properties (due strictly after the window's end,
increasing with the key)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whenever import Instant

from databricks_bundle_decorators import Registry
from databricks_bundle_decorators.backfill import (
    DailyBackfill,
    Deadline,
    DeadlineMonitor,
    HourlyBackfill,
    MonthlyBackfill,
    QuartzSchedule,
    StaticBackfill,
    TimeBackfill,
    WeeklyBackfill,
)
from databricks_bundle_decorators.errors import DefinitionError

AMS = "Europe/Amsterdam"
HALF_HOUR = timedelta(minutes=30)


def _utc(text: str) -> Instant:
    return Instant.parse_iso(text)


# (id, backfill, deadline, key, due in UTC). Amsterdam: +01 until 2024-03-31 02:00, then
# +02 (02:00-03:00 skipped) until 2024-10-27 03:00, when 02:00-03:00 repeats.
DUE_TABLE = [
    ("daily-before-spring", DailyBackfill("2024-03-01", tz=AMS), "09:00", "2024-03-30",
     "2024-03-31T07:00:00Z"),
    ("daily-spring-day", DailyBackfill("2024-03-01", tz=AMS), "09:00", "2024-03-31",
     "2024-04-01T07:00:00Z"),
    ("daily-before-fall", DailyBackfill("2024-10-01", tz=AMS), "09:00", "2024-10-26",
     "2024-10-27T08:00:00Z"),
    ("daily-fall-day-25h", DailyBackfill("2024-10-01", tz=AMS), "09:00", "2024-10-27",
     "2024-10-28T08:00:00Z"),
    ("daily-skipped-0230-after-jump", DailyBackfill("2024-03-01", tz=AMS), "02:30",
     "2024-03-30", "2024-03-31T01:30:00Z"),
    ("daily-repeated-0230-first", DailyBackfill("2024-10-01", tz=AMS), "02:30",
     "2024-10-26", "2024-10-27T00:30:00Z"),
    ("daily-midnight-next-day", DailyBackfill("2024-03-01", tz=AMS), "00:00", "2024-03-30",
     "2024-03-31T22:00:00Z"),
    ("daily-data-lag-1", DailyBackfill("2024-03-01", tz=AMS, data_lag=1), "09:00",
     "2024-03-30", "2024-04-01T07:00:00Z"),
    ("hourly-before-gap", HourlyBackfill("2024-03-31T00", tz=AMS), HALF_HOUR,
     "2024-03-31T01", "2024-03-31T01:30:00Z"),
    ("hourly-after-gap", HourlyBackfill("2024-03-31T00", tz=AMS), HALF_HOUR,
     "2024-03-31T03", "2024-03-31T02:30:00Z"),
    ("hourly-before-repeat", HourlyBackfill("2024-10-27T00", tz=AMS), HALF_HOUR,
     "2024-10-27T01", "2024-10-27T00:30:00Z"),
    ("hourly-repeated-two-hours", HourlyBackfill("2024-10-27T00", tz=AMS), HALF_HOUR,
     "2024-10-27T02", "2024-10-27T02:30:00Z"),
    ("hourly-after-repeat", HourlyBackfill("2024-10-27T00", tz=AMS), HALF_HOUR,
     "2024-10-27T03", "2024-10-27T03:30:00Z"),
    ("monthly-march", MonthlyBackfill("2024-01-01", tz=AMS), "09:00", "2024-03-01",
     "2024-04-01T07:00:00Z"),
    ("monthly-october", MonthlyBackfill("2024-01-01", tz=AMS), "09:00", "2024-10-01",
     "2024-11-01T08:00:00Z"),
    ("monthly-after-3h", MonthlyBackfill("2024-01-01", tz=AMS), timedelta(hours=3),
     "2024-10-01", "2024-11-01T02:00:00Z"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("backfill", "deadline", "key", "due"),
    [pytest.param(*row[1:], id=row[0]) for row in DUE_TABLE],
)
def test_due_time_across_amsterdam_clock_changes(
    backfill: TimeBackfill, deadline: str | timedelta, key: str, due: str
) -> None:
    made = Deadline(deadline) if isinstance(deadline, str) else Deadline(after=deadline)
    assert made.for_keys(backfill).due(key) == _utc(due)


def test_due_keys_on_a_fixed_clock() -> None:
    deadlines = Deadline("09:00").for_keys(DailyBackfill("2024-03-29", tz=AMS))
    keys = ["2024-03-29", "2024-03-30", "2024-03-31", "2024-04-01"]
    # 2024-03-31's key is due at 2024-04-01 09:00 +02, exactly now: not before now
    assert deadlines.due_keys(keys, _utc("2024-04-01T07:00:00Z")) == ["2024-03-29", "2024-03-30"]
    assert deadlines.due_keys(keys, _utc("2024-04-01T07:00:01Z")) == keys[:3]
    assert deadlines.due_keys(keys, _utc("2024-03-30T07:59:59Z")) == []


def test_hourly_due_keys_on_a_fixed_clock_across_both_clock_changes() -> None:
    spring = Deadline(after=HALF_HOUR).for_keys(HourlyBackfill("2024-03-31T00", tz=AMS))
    keys = ["2024-03-31T01", "2024-03-31T03"]  # 02:00-03:00 does not exist that night
    # T01 (00:00-01:00Z) due 01:30Z; T03 (01:00-02:00Z, right after the jump) due 02:30Z
    assert spring.due_keys(keys, _utc("2024-03-31T01:30:00Z")) == []
    assert spring.due_keys(keys, _utc("2024-03-31T02:29:59Z")) == keys[:1]
    assert spring.due_keys(keys, _utc("2024-03-31T02:30:01Z")) == keys

    fall = Deadline(after=HALF_HOUR).for_keys(HourlyBackfill("2024-10-27T00", tz=AMS))
    keys = ["2024-10-27T01", "2024-10-27T02", "2024-10-27T03"]
    # T02 holds both passes of 02:00-03:00 (00:00-02:00Z): due 02:30Z, not at the first
    # pass's 03:30 local (01:30Z)
    assert fall.due_keys(keys, _utc("2024-10-27T01:30:01Z")) == keys[:1]
    assert fall.due_keys(keys, _utc("2024-10-27T02:30:00Z")) == keys[:1]
    assert fall.due_keys(keys, _utc("2024-10-27T02:30:01Z")) == keys[:2]
    assert fall.due_keys(keys, _utc("2024-10-27T03:30:01Z")) == keys


def test_monthly_due_keys_on_a_fixed_clock_across_the_spring_change() -> None:
    deadlines = Deadline("09:00").for_keys(MonthlyBackfill("2024-01-01", tz=AMS))
    keys = ["2024-02-01", "2024-03-01", "2024-04-01"]
    # February is due 2024-03-01 09:00 +01 (08:00Z); March at 2024-04-01 09:00 +02
    # (07:00Z), an hour earlier in UTC than at March's own start offset
    assert deadlines.due_keys(keys, _utc("2024-03-01T07:59:59Z")) == []
    assert deadlines.due_keys(keys, _utc("2024-03-01T08:00:01Z")) == keys[:1]
    assert deadlines.due_keys(keys, _utc("2024-04-01T07:00:00Z")) == keys[:1]
    assert deadlines.due_keys(keys, _utc("2024-04-01T07:00:01Z")) == keys[:2]
    assert deadlines.due_keys(keys, _utc("2024-05-01T07:00:01Z")) == keys


def test_the_schedule_time_zone_wins_over_the_backfill_one() -> None:
    registry = Registry()

    @registry.job(
        backfill=DailyBackfill("2024-03-01"),  # UTC keys
        schedule="0 0 8 * * ?",
        deadline=Deadline("09:00"),
    )
    def utc_keys() -> None: ...

    @registry.job(backfill=DailyBackfill("2024-03-01"), deadline=Deadline("09:00"))
    def no_schedule() -> None: ...

    @registry.job(
        backfill=DailyBackfill("2024-03-01"),
        schedule=QuartzSchedule("0 0 8 * * ?", timezone=AMS),
        deadline=Deadline("09:00"),
    )
    def amsterdam_schedule() -> None: ...

    assert utc_keys.deadlines is not None and no_schedule.deadlines is not None
    assert no_schedule.deadlines.due("2024-03-30") == _utc("2024-03-31T09:00:00Z")
    assert utc_keys.deadlines.due("2024-03-30") == _utc("2024-03-31T09:00:00Z")
    assert amsterdam_schedule.deadlines is not None
    assert amsterdam_schedule.deadlines.due("2024-03-30") == _utc("2024-03-31T07:00:00Z")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param(
            {"backfill": HourlyBackfill("2024-01-01T00"), "deadline": Deadline("09:00")},
            "for hourly keys use Deadline(after=timedelta(...))",
            id="time-of-day-on-hourly",
        ),
        pytest.param(
            {"backfill": StaticBackfill(["a", "b"]), "deadline": Deadline(after=HALF_HOUR)},
            "a deadline needs a time-based backfill=",
            id="static-keys",
        ),
        pytest.param(
            {"deadline": Deadline("09:00")},
            "a deadline needs a time-based backfill= (Daily, Weekly, Monthly, Hourly); got none",
            id="no-backfill",
        ),
        pytest.param(
            {"backfill": DailyBackfill("2024-01-01"), "deadline": "09:00"},
            "deadline must be Deadline('HH:MM') or Deadline(after=timedelta(...)), got str",
            id="not-a-deadline",
        ),
        pytest.param(
            {
                "backfill": DailyBackfill("2024-01-01"),
                "deadline": Deadline(
                    "09:00",
                    monitor=DeadlineMonitor(
                        "main.ops.alerts", "0 0 99 * * ?", {"on_failure": ["a@example.com"]}
                    ),
                ),
            },
            "hour",
            id="bad-monitor-schedule",
        ),
    ],
)
def test_a_deadline_that_does_not_fit_fails_at_definition(
    kwargs: dict[str, object], message: str
) -> None:
    registry = Registry()
    with pytest.raises(DefinitionError, match="late_job") as raised:
        registry.job(name="late_job", **kwargs)(lambda: None)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Deadline(), "Deadline takes a time of day or after="),
        (lambda: Deadline("9:00"), "must be HH:MM"),
        (lambda: Deadline("09:00", after=HALF_HOUR), "Deadline takes a time of day or after="),
        (lambda: Deadline(after=timedelta(0)), "longer than zero"),
        (lambda: DeadlineMonitor("alerts", email_notifications={"on_failure": ["a@b.c"]}),
         "catalog.schema.table"),
        (lambda: DeadlineMonitor("main.ops.alerts"), "needs an on_failure destination"),
        (lambda: DeadlineMonitor("main.ops.alerts", email_notifications={"on_success": ["x"]}),
         "needs an on_failure destination"),
        (lambda: DeadlineMonitor("main.ops.alerts", webhook_notifications={
            "on_failure": [{"id": str(n)} for n in range(4)]}),
         "Databricks allows at most 3 per event"),
    ],
    ids=["neither", "bad-time", "both", "zero-after", "bad-table", "no-destination",
         "no-on-failure", "four-webhooks"],
)  # fmt: skip
def test_malformed_deadlines_are_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        make()  # type: ignore[operator]
    assert message in str(raised.value)


# -- properties ---------------------------------------------------------------------------

ZONES = [AMS, "UTC", "America/Santiago", "Australia/Lord_Howe", "Pacific/Apia", "Pacific/Chatham"]
CASES: list[tuple[type[TimeBackfill], str, str | timedelta]] = [
    (HourlyBackfill, "2000-01-01T00", timedelta(minutes=1)),
    (HourlyBackfill, "2000-01-01T00", timedelta(hours=30)),
    (DailyBackfill, "2000-01-01", "00:00"),
    (DailyBackfill, "2000-01-01", "02:30"),
    (DailyBackfill, "2000-01-01", "23:59"),
    (WeeklyBackfill, "2000-W01", "09:00"),
    (MonthlyBackfill, "2000-01-01", "03:00"),
    (MonthlyBackfill, "2000-01-01", timedelta(days=40)),
]


@settings(max_examples=60, deadline=None)
@given(
    case=st.sampled_from(CASES),
    zone=st.sampled_from(ZONES),
    lag=st.integers(0, 2),
    at=st.datetimes(datetime(2001, 1, 1), datetime(2030, 1, 1)),
)
def test_due_is_after_the_window_end_and_increases_with_the_key(
    case: tuple[type[TimeBackfill], str, str | timedelta], zone: str, lag: int, at: datetime
) -> None:
    kind, first, rule = case
    backfill = kind(first, tz=zone, data_lag=lag)
    deadline = Deadline(rule) if isinstance(rule, str) else Deadline(after=rule)
    deadlines = deadline.for_keys(backfill)
    key = backfill.key_of(at.replace(tzinfo=timezone.utc))
    keys = [key, *(backfill.shift_key(key, n) for n in (1, 2, 3))]
    dues = [deadlines.due(k) for k in keys]
    for k, due in zip(keys, dues, strict=True):
        assert due > backfill.window(k).end
    assert dues == sorted(dues) and len(set(dues)) == len(dues)
