"""A job in the default registry, for ``dbxdec run`` (the CLI imports pipelines by module)."""

from __future__ import annotations

from typing import Any

from databricks_bundle_decorators import DailyBackfill, job, params, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys
from tests.runtime.pipelines import events_for

cli_io = SparkTableIoManager("main.cli.events", partition_column="day", time_column="ts")


@job(
    params={"shift_days": "0"},
    backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-12-31"),
)
def cli_daily() -> None:
    @task(io_manager=cli_io)
    def events() -> Any:
        return events_for(get_written_keys(), shift_days=int(params["shift_days"]))

    @task
    def count(rows: Any) -> None:
        assert rows.count() == 3 * len(get_written_keys())

    count(events())


history_io = SparkTableIoManager("main.cli.history", partition_column="day", write="append_once")


@job(
    params={"per_day": "3"},
    backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-12-31"),
)
def cli_history() -> None:
    """An append-once history table (seed 004)."""

    @task(io_manager=history_io)
    def load() -> Any:
        return events_for(get_written_keys(), per_day=int(params["per_day"]))

    load()
