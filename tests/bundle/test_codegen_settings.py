"""Codegen: schedules, tags, for-each tasks, settings pass-through, determinism, and the
generated jobs against the typed load and the official bundle schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators import (
    DailyBackfill,
    HourlyBackfill,
    Registry,
    for_each_task,
    task,
    task_value,
)
from databricks_bundle_decorators.backfill import BACKFILL_PARAMS
from databricks_bundle_decorators.bundle import (
    SchemaValidator,
    generate_jobs,
    job_resource,
    typed_problems,
)
from databricks_bundle_decorators.errors import DefinitionError

from .codegen_jobs import JOB_SHAPES, SMALL, pipeline, sales_job, tasks_of
from .projects import schema_path


@pytest.fixture(scope="module")
def schema() -> SchemaValidator:
    return SchemaValidator(schema_path())


# -- settings, tags and shapes ---------------------------------------------------------------


def test_schedule_is_quartz_in_the_backfill_time_zone() -> None:
    job = sales_job(
        backfill=DailyBackfill("2024-01-01", tz="Europe/Berlin"), schedule="0 30 6 ? * MON-FRI"
    )
    assert job["schedule"] == {
        "quartz_cron_expression": "0 30 6 ? * MON-FRI",
        "timezone_id": "Europe/Berlin",
    }


def test_paused_schedules_option() -> None:
    registry = Registry()
    pipeline(registry, schedule="0 0 6 * * ?")
    job = job_resource(registry.get("sales"), pause_schedules=True)
    assert job["schedule"]["pause_status"] == "PAUSED"


def test_backfill_jobs_allow_concurrent_runs_and_queue_by_default() -> None:
    assert sales_job(backfill=DailyBackfill("2024-01-01"))["max_concurrent_runs"] == 10
    assert sales_job()["max_concurrent_runs"] == 1
    assert sales_job()["queue"] == {"enabled": True}
    overridden = sales_job(max_concurrent_runs=3, queue={"enabled": False})
    assert overridden["max_concurrent_runs"] == 3
    assert overridden["queue"] == {"enabled": False}


def test_tags_hold_user_tags_and_the_backfill_definition() -> None:
    job = sales_job(
        backfill=HourlyBackfill(
            "2024-03-01T00", "2024-03-31T23", tz="America/New_York", lookback=2
        ),
        tags={"team": "data"},
    )
    assert job["tags"] == {
        "team": "data",
        "dbxdec_backfill": "hourly",
        "dbxdec_backfill_start": "2024-03-01T00",
        "dbxdec_backfill_end": "2024-03-31T23",
        "dbxdec_backfill_tz": "America/New_York",
        "dbxdec_backfill_lookback": "2",
        "dbxdec_backfill_data_lag": "0",
        "dbxdec_backfill_gaps": "false",
    }


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ({"dbxdec_backfill": "x"}, "tag 'dbxdec_backfill' is reserved"),
        ({"team": "data & ml"}, "may only hold letters"),
        ({"team": "x" * 256}, "longer than 255"),
        ({f"t{i}": "v" for i in range(26)}, "at most 25"),
    ],
    ids=["reserved-prefix", "bad-character", "too-long", "too-many"],
)
def test_tags_that_break_databricks_rules_are_definition_errors(
    tags: dict[str, str], message: str
) -> None:
    with pytest.raises(DefinitionError, match=message) as caught:
        sales_job(tags=tags)
    assert caught.value.job == "sales"


# -- for-each tasks ----------------------------------------------------------------------------


def test_for_each_task_wraps_the_wheel_task_and_passes_the_element() -> None:
    registry = Registry()

    @registry.job(cluster=SMALL)
    def regions() -> None:
        @task
        def plan() -> None: ...

        @for_each_task(
            inputs=task_value(plan, "regions"), concurrency=4, retries=2, run_if="ALL_DONE"
        )
        def load(inputs: str) -> None: ...

        @for_each_task(inputs=["us", "eu"])
        def report(inputs: str) -> None: ...

        plan()
        load()
        report()

    tasks = tasks_of(job_resource(registry.get("regions")))
    load = tasks["load"]
    assert load["depends_on"] == [{"task_key": "plan"}]
    assert load["run_if"] == "ALL_DONE"
    loop = load["for_each_task"]
    assert loop["inputs"] == "{{tasks.plan.values.regions}}"
    assert loop["concurrency"] == 4
    inner = loop["task"]
    assert inner["task_key"] == "load_iteration"
    assert inner["max_retries"] == 2
    assert inner["job_cluster_key"] == "small"
    assert "run_if" not in inner
    # Fed by a task value: a notebook task (task values are documented for notebooks only).
    assert inner["notebook_task"]["base_parameters"]["dbxdec_task"] == "load"
    assert inner["notebook_task"]["base_parameters"]["dbxdec_input"] == "{{input}}"
    assert json.loads(tasks["report"]["for_each_task"]["inputs"]) == ["us", "eu"]
    report = tasks["report"]["for_each_task"]["task"]
    assert report["python_wheel_task"]["named_parameters"]["dbxdec_input"] == "{{input}}"
    assert "python_wheel_task" not in load


# -- pass-through and reserved settings --------------------------------------------------------


def test_other_job_and_task_settings_pass_through() -> None:
    registry = Registry()

    @registry.job(
        email_notifications={"on_failure": ["data@example.com"]},
        trigger={"periodic": {"interval": 1, "unit": "HOURS"}},
        timeout_seconds=7200,
    )
    def passthrough() -> None:
        @task(
            run_if="ALL_SUCCESS",
            health={
                "rules": [{"metric": "RUN_DURATION_SECONDS", "op": "GREATER_THAN", "value": 60}]
            },
        )
        def only() -> None: ...

        only()

    job = job_resource(registry.get("passthrough"))
    assert job["email_notifications"] == {"on_failure": ["data@example.com"]}
    assert job["trigger"] == {"periodic": {"interval": 1, "unit": "HOURS"}}
    assert job["timeout_seconds"] == 7200
    assert job["tasks"][0]["run_if"] == "ALL_SUCCESS"
    assert typed_problems("passthrough", job) == []


@pytest.mark.parametrize(
    ("job_settings", "task_settings", "message"),
    [
        ({"tasks": []}, {}, "job setting 'tasks' is generated"),
        ({"parameters": []}, {}, "job setting 'parameters' is generated"),
        ({}, {"python_wheel_task": {}}, "task 'only': task setting 'python_wheel_task'"),
        ({}, {"max_retries": 2}, "RetryPolicy"),
    ],
)
def test_settings_dbxdec_generates_cannot_be_passed(
    job_settings: dict[str, Any], task_settings: dict[str, Any], message: str
) -> None:
    registry = Registry()

    @registry.job(**job_settings)
    def reserved() -> None:
        @task(**task_settings)
        def only() -> None: ...

        only()

    with pytest.raises(DefinitionError, match=message):
        job_resource(registry.get("reserved"))


def test_an_unknown_setting_is_reported_with_job_task_and_field() -> None:
    registry = Registry()

    @registry.job(max_concurent_runs=2)
    def typo() -> None:
        @task(timeout_second=60)
        def only() -> None: ...

        only()

    problems = typed_problems("typo", job_resource(registry.get("typo")))
    assert {(p.job, p.task, p.field) for p in problems} == {
        ("typo", None, "max_concurent_runs"),
        ("typo", "only", "timeout_second"),
    }
    assert all("unknown setting" in p.message for p in problems)


# -- determinism and validity --------------------------------------------------------------------


def test_generation_is_deterministic() -> None:
    first = json.dumps(sales_job(params={"a": "1"}, backfill=DailyBackfill("2024-01-01")))
    second = json.dumps(sales_job(params={"a": "1"}, backfill=DailyBackfill("2024-01-01")))
    assert first == second


def test_generate_jobs_covers_a_registry_in_name_order() -> None:
    registry = Registry()
    for name in ("zeta", "alpha", "mid"):

        def body() -> None:
            @task
            def only() -> None: ...

            only()

        registry.job(name=name)(body)
    assert list(generate_jobs(registry)) == ["alpha", "mid", "zeta"]


@pytest.mark.parametrize("shape", list(JOB_SHAPES), ids=list(JOB_SHAPES))
def test_generated_jobs_pass_the_typed_load_and_the_bundle_schema(
    shape: str, schema: SchemaValidator
) -> None:
    job = sales_job(**JOB_SHAPES[shape])
    assert typed_problems("sales", job) == []
    assert schema.problems("sales", job) == []


_PARAM_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,20}", fullmatch=True).filter(
    lambda n: not n.startswith("dbxdec_") and n not in BACKFILL_PARAMS
)


@given(names=st.lists(_PARAM_NAMES, min_size=1, max_size=5, unique=True))
def test_any_valid_parameter_names_are_left_to_pushdown(names: list[str]) -> None:
    registry = Registry()
    pipeline(registry, params={n: f"default-{n}" for n in names})
    job = job_resource(registry.get("sales"))
    assert [p["name"] for p in job["parameters"]] == names
    for spec in job["tasks"]:
        named = spec["python_wheel_task"]["named_parameters"]
        assert not set(names) & set(named)  # Databricks pushes them down
        assert named["dbxdec_task"] == spec["task_key"]  # a keyword task still
    assert typed_problems("sales", job) == []
