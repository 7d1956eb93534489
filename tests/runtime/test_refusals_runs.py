"""Local runs the runtime refuses: for-each tasks whose iteration cannot run locally,
and checks on a task without an IoManager. Each refusal is the failed task's one line;
no iteration runs, nothing is stored, downstream tasks are skipped."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import (
    DailyBackfill,
    Registry,
    for_each_task,
    params,
    set_task_value,
    task,
    task_value,
)
from databricks_bundle_decorators.checks import MinRowCount
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.runtime import JobRunResult, run_job_locally
from databricks_bundle_decorators.runtime.session.spark import SUBMIT_ARGS_ENV

loops = Registry()


def _record(line: str) -> None:
    """Append ``line`` to the file the job parameter ``out`` names."""
    with open(params["out"], "a", encoding="utf-8") as out:
        out.write(line + "\n")


@loops.job(params={"out": "", "regions": "[]"})
def fan_out() -> None:
    @for_each_task(inputs=["us", "eu", "jp"], concurrency=2)
    def greet(inputs: str) -> None:
        _record(f"greet:{inputs}")

    @task
    def discover() -> None:
        import json

        set_task_value("regions", json.loads(params["regions"]))

    @for_each_task(inputs=task_value(discover, "regions"))
    def notify(inputs: Any) -> None:
        _record(f"notify:{inputs}")

    @task(depends_on=[notify])
    def done() -> None:
        _record("done")

    greet()
    discover()
    notify()
    done()


@loops.job(params={"out": ""})
def referenced() -> None:
    @for_each_task(inputs="{{tasks.discover.values.regions}}")
    def notify(inputs: str) -> None:
        _record(f"notify:{inputs}")

    notify()


@loops.job(params={"out": ""})
def stored() -> None:
    @for_each_task(inputs=["eu"], io_manager=SparkTableIoManager("main.refusals.loop"))
    def notify(inputs: str) -> None:
        _record(f"notify:{inputs}")

    notify()


@pytest.fixture
def out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file iterations record to. A local run prepares ``$PYSPARK_SUBMIT_ARGS`` for
    a later session; the variable is restored after the test."""
    monkeypatch.setenv(SUBMIT_ARGS_ENV, os.environ.get(SUBMIT_ARGS_ENV, ""))
    return tmp_path / "iterations.txt"


def run(job: str, out: Path, **given: str) -> JobRunResult:
    warehouse = out.parent / "warehouse"
    return run_job_locally(loops, job, params={"out": str(out), **given}, warehouse=warehouse)


def recorded(out: Path) -> list[str]:
    return out.read_text(encoding="utf-8").splitlines() if out.exists() else []


def test_for_each_runs_every_element_in_order_locally(out: Path) -> None:
    result = run("fan_out", out, regions='["eu", "jp"]')
    assert result.succeeded, result
    assert recorded(out) == ["greet:us", "greet:eu", "greet:jp", "notify:eu", "notify:jp", "done"]


@pytest.mark.parametrize(
    ("regions", "kind"),
    [
        pytest.param('{"eu": 1}', "dict", id="object"),
        pytest.param('"eu,jp"', "str", id="string"),
        pytest.param("null", "NoneType", id="null"),
    ],
)
def test_for_each_inputs_from_a_task_value_must_be_a_list(
    out: Path, regions: str, kind: str
) -> None:
    result = run("fan_out", out, regions=regions)
    statuses = {t.task_key: (t.status, t.error) for t in result.tasks}
    assert statuses["notify"] == (
        "failed",
        f"task 'notify': for-each inputs must be a JSON list, got {kind}",
    )
    assert statuses["done"] == ("skipped", "upstream task 'notify' failed")
    assert [line for line in recorded(out) if not line.startswith("greet:")] == []


def test_a_databricks_reference_as_for_each_inputs_is_refused_locally(out: Path) -> None:
    result = run("referenced", out)
    assert [(t.task_key, t.status, t.error) for t in result.tasks] == [
        (
            "notify",
            "failed",
            "task 'notify': for-each inputs '{{tasks.discover.values.regions}}' are a "
            "Databricks reference; locally use a list or task_value(...)",
        )
    ]
    assert recorded(out) == []


def test_a_for_each_task_with_an_io_manager_is_refused_before_any_iteration(out: Path) -> None:
    result = run("stored", out)
    assert [(t.task_key, t.status, t.error) for t in result.tasks] == [
        (
            "notify",
            "failed",
            "task 'notify': a for-each task's iterations cannot share one io_manager output; "
            "write from the iterations or use a plain task",
        )
    ]
    assert recorded(out) == []
    assert not (out.parent / "warehouse" / "main").exists()


checked = Registry()


@checked.job(params={"out": "", "shape": "rows"}, backfill=DailyBackfill("2024-01-01"))
def summarised() -> None:
    @task(checks=[MinRowCount(3)])  # no io_manager: the checks judge the returned value
    def summary() -> Any:
        if params["shape"] == "dict":
            return {"rows": 2}
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate().range(2)

    @task(depends_on=[summary])
    def publish() -> None:
        _record("published")

    summary()
    publish()


def test_checks_without_an_io_manager_are_accepted_at_definition() -> None:
    node = summarised.graph["summary"]
    assert node.definition.io_manager is None
    assert node.definition.checks == (MinRowCount(3),)


def run_summary(out: Path, shape: str) -> JobRunResult:
    return run_job_locally(
        checked,
        "summarised",
        params={"out": str(out), "shape": shape, "backfill_key": "2024-01-02"},
        warehouse=out.parent / "warehouse",
    )


def test_checks_on_a_value_that_is_not_a_dataframe_are_refused_at_run_time(out: Path) -> None:
    result = run_summary(out, "dict")
    assert [(t.task_key, t.status, t.error) for t in result.tasks] == [
        (
            "summary",
            "failed",
            "task 'summary' has checks but returned a dict; checks apply to Spark DataFrames",
        ),
        ("publish", "skipped", "upstream task 'summary' failed"),
    ]
    assert recorded(out) == []


@pytest.mark.spark
def test_a_failing_check_without_an_io_manager_fails_the_task(spark: Any, out: Path) -> None:
    result = run_summary(out, "rows")
    assert [(t.task_key, t.status, t.error) for t in result.tasks] == [
        (
            "summary",
            "failed",
            "task 'summary': check min_row_count(3) failed for key 2024-01-02: 2 rows, "
            "expected at least 3",
        ),
        ("publish", "skipped", "upstream task 'summary' failed"),
    ]
    assert recorded(out) == []
