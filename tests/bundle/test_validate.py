"""Typed load, JSON schema and variable checks of generated jobs (bundle/validate.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from databricks_bundle_decorators import DailyBackfill, Registry, task
from databricks_bundle_decorators.bundle import SchemaValidator, job_resource, typed_problems
from databricks_bundle_decorators.bundle.validate import variable_problems
from databricks_bundle_decorators.io_managers import SparkTableIoManager

from .projects import schema_path


@pytest.fixture(scope="module")
def schema() -> SchemaValidator:
    return SchemaValidator(schema_path())


@pytest.fixture(scope="module")
def good_job() -> dict[str, Any]:
    registry = Registry()

    @registry.job(params={"catalog": "${var.catalog}"}, backfill=DailyBackfill("2024-01-01"))
    def sales() -> None:
        @task(io_manager=SparkTableIoManager("main.sales.raw", partition_column="day"))
        def extract() -> None: ...

        @task
        def load(rows: Any) -> None: ...

        load(extract())

    return job_resource(registry.get("sales"))


def _broken(job: dict[str, Any]) -> dict[str, Any]:
    bad = copy.deepcopy(job)
    bad["schedule"] = {"quartz_cron_expression": "0 0 6 * * ?", "timezone": "UTC"}
    bad["max_concurrent_runs"] = "many"
    bad["tasks"][1]["python_wheel_task"]["named_parameters"]["extra"] = {"nested": 1}
    bad["tasks"][0]["timeout_second"] = 10
    return bad


def test_a_good_job_has_no_problems(good_job: dict[str, Any], schema: SchemaValidator) -> None:
    assert typed_problems("sales", good_job) == []
    assert schema.problems("sales", good_job) == []


def test_schema_problems_name_job_task_and_field(
    good_job: dict[str, Any], schema: SchemaValidator
) -> None:
    found: dict[tuple[str | None, str], list[str]] = {}
    for problem in schema.problems("sales", _broken(good_job)):
        found.setdefault((problem.task, problem.field), []).append(problem.message)
    assert found[(None, "max_concurrent_runs")] == ["'many' is not of type integer"]
    assert sorted(found[(None, "schedule")]) == [
        "'timezone_id' is a required property",
        "Additional properties are not allowed ('timezone' was unexpected)",
    ]
    assert found[("load", "python_wheel_task.named_parameters.extra")] == [
        "{'nested': 1} is not of type 'string'"
    ]
    assert found[("extract", "")] == [
        "Additional properties are not allowed ('timeout_second' was unexpected)"
    ]
    assert len(found) == 4


def test_schema_problems_render_as_one_line_each(
    good_job: dict[str, Any], schema: SchemaValidator
) -> None:
    lines = [str(p) for p in schema.problems("sales", _broken(good_job))]
    assert "job 'sales', field 'max_concurrent_runs': 'many' is not of type integer" in lines
    assert all("\n" not in line for line in lines)


def test_typed_problems_locate_each_broken_setting(good_job: dict[str, Any]) -> None:
    found = {(p.task, p.field) for p in typed_problems("sales", _broken(good_job))}
    assert found == {
        (None, "schedule"),
        (None, "max_concurrent_runs"),
        ("extract", "timeout_second"),
    }


def test_bundle_variable_references_must_be_declared(good_job: dict[str, Any]) -> None:
    assert variable_problems("sales", good_job, {"catalog"}) == []
    problems = variable_problems("sales", good_job, {"warehouse"})
    assert [(p.field, p.message) for p in problems] == [
        ("parameters[0].default", "references undeclared bundle variable 'catalog'")
    ]


def test_variable_references_satisfy_the_schema(
    good_job: dict[str, Any], schema: SchemaValidator
) -> None:
    job = copy.deepcopy(good_job)
    job["max_concurrent_runs"] = "${var.max_runs}"
    assert schema.problems("sales", job) == []
