"""Spark-free jobs whose tasks record the keys they resolved (for the trigger-time tests)."""

from __future__ import annotations

from databricks_bundle_decorators import (
    DailyBackfill,
    HourlyBackfill,
    Registry,
    get_backfill_keys,
    get_run_logical_date,
    set_task_value,
    task,
)
from databricks_bundle_decorators.io_managers import get_written_keys

registry = Registry()

DAILY = DailyBackfill("2024-01-01", tz="Europe/Berlin", lookback=1, data_lag=1)
HOURLY = HourlyBackfill("2024-01-01T00", tz="Europe/Berlin")


def _record() -> None:
    set_task_value("keys", get_backfill_keys())
    set_task_value("written", get_written_keys())
    set_task_value("logical_date", get_run_logical_date().isoformat())


@registry.job(backfill=DAILY)
def daily_clock() -> None:
    @task
    def first() -> None:
        _record()

    @task(depends_on=[first])
    def second() -> None:
        _record()

    first()
    second()


@registry.job(backfill=HOURLY)
def hourly_clock() -> None:
    @task
    def only() -> None:
        _record()

    only()
