"""The local runner: dependency order, statuses, events, task selection, errors."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import DailyBackfill, Registry, task
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.runtime import (
    LocalTaskValueStore,
    TaskEvent,
    run_job_locally,
    slice_parameters,
)

from .pipelines import partition_values, registry

local = Registry()


@local.job(backfill=DailyBackfill("2024-01-01", "2024-01-31"))
def fragile() -> None:
    @task
    def start() -> None:
        return None

    @task(depends_on=[start])
    def boom() -> None:
        raise ZeroDivisionError("division by zero")

    @task(depends_on=[boom])
    def after() -> None:
        return None

    @task(depends_on=[start])
    def sibling() -> None:
        return None

    start()
    boom()
    after()
    sibling()


@pytest.mark.spark
def test_failure_skips_downstream_and_reports_task_and_key(spark: Any, warehouse: Path) -> None:
    events: list[TaskEvent] = []
    result = run_job_locally(
        local,
        "fragile",
        params={"backfill_key": "2024-01-05"},
        warehouse=warehouse,
        on_event=events.append,
    )
    statuses = {t.task_key: t.status for t in result.tasks}
    assert statuses == {
        "start": "succeeded",
        "boom": "failed",
        "after": "skipped",
        "sibling": "succeeded",
    }
    errors = {t.task_key: t.error for t in result.tasks}
    assert (
        errors["boom"]
        == "task 'boom' failed for key 2024-01-05: ZeroDivisionError: division by zero"
    )
    assert errors["after"] == "upstream task 'boom' failed"
    assert not result.succeeded and result.keys == ("2024-01-05",)
    assert [(e.kind, e.task_key) for e in events][:4] == [
        ("started", "start"),
        ("finished", "start"),
        ("started", "boom"),
        ("finished", "boom"),
    ]


@pytest.mark.spark
def test_static_keys_and_task_values_between_tasks(spark: Any, warehouse: Path) -> None:
    result = run_job_locally(
        registry,
        "regional",
        params={"backfill_start_key": "eu", "backfill_key": "us"},
        warehouse=warehouse,
    )
    assert result.succeeded, result
    store = LocalTaskValueStore(warehouse.parent / "task_values" / result.run_id)
    assert store.get("report", "regions") == ["eu", "us"]
    assert partition_values(spark, warehouse, "main.test.regions", "region") == ["eu", "us"]
    # run only the downstream task: it reads what the earlier run wrote, for its own key
    only = run_job_locally(
        registry, "regional", params={"backfill_key": "us"}, tasks=["report"], warehouse=warehouse
    )
    assert [t.task_key for t in only.tasks] == ["report"]
    store = LocalTaskValueStore(warehouse.parent / "task_values" / only.run_id)
    assert store.get("report", "regions") == ["us"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"job_name": "fragil"}, "unknown job 'fragil'. Did you mean 'fragile'?"),
        ({"tasks": ["bom"]}, "job 'fragile' has no task 'bom'. Did you mean 'boom'?"),
        ({"params": {"region": "x"}}, "job 'fragile' has no parameter 'region'."),
        ({"params": {"backfill_key": "2024-02-01"}}, "backfill_key '2024-02-01' is after"),
        (
            {"params": {"backfill_key": "01/02/2024"}},
            "is not a valid daily key: expected YYYY-MM-DD",
        ),
    ],
)
def test_usage_errors_run_nothing(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"job_name": "fragile", "params": {"backfill_key": "2024-01-02"}}
    arguments.update(kwargs)
    job_name = arguments.pop("job_name")
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("?", r"\?")):
        run_job_locally(local, job_name, warehouse=tmp_path / "wh", **arguments)
    assert not (tmp_path / "wh").exists()


def test_slice_parameters() -> None:
    assert slice_parameters(key="2024-01-01") == {
        "backfill_key": "2024-01-01",
        "backfill_start_key": "",
        "backfill_exact": "false",
    }
    assert slice_parameters(start="a", end="b", exact=True, params={"x": "1"}) == {
        "x": "1",
        "backfill_start_key": "a",
        "backfill_key": "b",
        "backfill_exact": "true",
    }
    with pytest.raises(UsageError, match="either --key K or --start A --end B"):
        slice_parameters(key="a", start="b", end="c")
    with pytest.raises(UsageError, match="missing --end"):
        slice_parameters(start="a")


failing = Registry()


@failing.job(backfill=DailyBackfill("2024-01-01"))
def always_fails() -> None:
    @task
    def explode() -> None:
        raise ValueError("the source is empty")

    explode()


@pytest.mark.spark
def test_the_same_failure_shows_its_traceback_once(
    spark: Any, warehouse: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="databricks_bundle_decorators.runtime")
    errors = []
    for key in ("2024-01-01", "2024-01-02", "2024-01-03"):
        result = run_job_locally(
            failing, "always_fails", params={"backfill_key": key}, warehouse=warehouse
        )
        errors.append(result.failed[0].error)
    assert errors == [
        f"task 'explode' failed for key {key}: ValueError: the source is empty"
        for key in ("2024-01-01", "2024-01-02", "2024-01-03")
    ]
    # the user's frames, once (no library frames, no second copy of the message)
    shown = [r.getMessage() for r in caplog.records if "failed in your code" in r.getMessage()]
    assert len(shown) == 1 and "in explode" in shown[0] and "ValueError:" not in shown[0]
