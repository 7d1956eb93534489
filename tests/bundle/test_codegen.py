"""Job settings generated from definitions (bundle/codegen.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators import (
    DailyBackfill,
    HourlyBackfill,
    Registry,
    RetryPolicy,
    StaticBackfill,
    for_each_task,
    job_cluster,
    task,
    task_value,
)
from databricks_bundle_decorators.bundle import (
    CodegenOptions,
    SchemaValidator,
    generate_jobs,
    job_resource,
    parameter_reference,
    typed_problems,
)
from databricks_bundle_decorators.bundle.framework_wheel import default_framework_wheel
from databricks_bundle_decorators.errors import DefinitionError
from databricks_bundle_decorators.io_managers import SparkTableIoManager

from .projects import schema_path

FRAMEWORK = f"./{default_framework_wheel()}"

SMALL = job_cluster(
    "small", spark_version="16.4.x-scala2.12", node_type_id="i3.xlarge", num_workers=2
)


def _pipeline(registry: Registry, **job_kwargs: Any) -> None:
    @registry.job(**job_kwargs)
    def sales() -> None:
        """Daily sales per region.

        Second paragraph, not in the description.
        """

        @task(
            io_manager=SparkTableIoManager("main.sales.raw", partition_column="day"),
            retries=RetryPolicy(3, 5_000, True),
            timeout_seconds=1800,
        )
        def extract() -> None:
            """Read raw sales."""

        @task(depends_on=[extract])
        def audit() -> None: ...

        @task
        def clean(rows: Any) -> None: ...

        clean(extract())
        audit()


def _job(**job_kwargs: Any) -> dict[str, Any]:
    registry = Registry()
    _pipeline(registry, **job_kwargs)
    return job_resource(registry.get("sales"), package_name="sales-pkg")


def _tasks(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["task_key"]: t for t in job["tasks"]}


@pytest.fixture(scope="module")
def schema() -> SchemaValidator:
    return SchemaValidator(schema_path())


# -- contract 1: the python wheel task --------------------------------------------------------


def test_backfill_job_tasks_push_every_parameter_down() -> None:
    job = _job(params={"source": "raw"}, backfill=DailyBackfill("2024-01-01"))
    wheel = _tasks(job)["clean"]["python_wheel_task"]
    assert wheel == {
        "package_name": "sales-pkg",
        "entry_point": "dbxdec-run",
        "named_parameters": {
            "dbxdec_job": "sales",
            "dbxdec_task": "clean",
            "dbxdec_module": __name__,
            "dbxdec_run_id": "{{job.run_id}}-{{job.repair_count}}",
            "source": "{{job.parameters.source}}",
            "backfill_key": "{{job.parameters.backfill_key}}",
            "backfill_start_key": "{{job.parameters.backfill_start_key}}",
            "backfill_exact": "{{job.parameters.backfill_exact}}",
            "backfill_run_time": "{{job.parameters.backfill_run_time}}",
        },
    }


def test_job_parameters_have_defaults_and_backfill_parameters_follow_user_ones() -> None:
    job = _job(params={"source": "raw", "limit": 10}, backfill=DailyBackfill("2024-01-01"))
    assert job["parameters"] == [
        {"name": "source", "default": "raw"},
        {"name": "limit", "default": "10"},
        {"name": "backfill_key", "default": ""},
        {"name": "backfill_start_key", "default": ""},
        {"name": "backfill_exact", "default": "false"},
        {"name": "backfill_run_time", "default": "{{job.trigger.time.timestamp_ms}}"},
    ]


def test_a_job_without_backfill_or_params_has_no_parameters() -> None:
    job = _job()
    assert "parameters" not in job
    assert set(_tasks(job)["extract"]["python_wheel_task"]["named_parameters"]) == {
        "dbxdec_job",
        "dbxdec_task",
        "dbxdec_module",
        "dbxdec_run_id",
    }


def test_option_params_replace_declared_defaults_only() -> None:
    registry = Registry()
    _pipeline(registry, params={"catalog": "main"})
    job = job_resource(
        registry.get("sales"), options=CodegenOptions(params={"catalog": "dev", "other": "x"})
    )
    assert job["parameters"] == [{"name": "catalog", "default": "dev"}]


@pytest.mark.parametrize(
    ("name", "reference"),
    [
        ("source", "{{job.parameters.source}}"),
        ("source.path", "{{job.parameters.`source.path`}}"),
        ("run-date", "{{job.parameters.`run-date`}}"),
    ],
)
def test_parameter_references_quote_names_with_special_characters(
    name: str, reference: str
) -> None:
    assert parameter_reference(name) == reference


# -- tasks ------------------------------------------------------------------------------------


def test_tasks_follow_dependencies_with_data_and_control_edges() -> None:
    job = _job()
    tasks = _tasks(job)
    assert [t["task_key"] for t in job["tasks"]] == ["extract", "clean", "audit"]
    assert "depends_on" not in tasks["extract"]
    assert tasks["clean"]["depends_on"] == [{"task_key": "extract"}]
    assert tasks["audit"]["depends_on"] == [{"task_key": "extract"}]


def test_retries_and_timeout_map_to_task_settings() -> None:
    extract = _tasks(_job())["extract"]
    assert extract["max_retries"] == 3
    assert extract["min_retry_interval_millis"] == 5_000
    assert extract["retry_on_timeout"] is True
    assert extract["timeout_seconds"] == 1800
    assert "max_retries" not in _tasks(_job())["clean"]


def test_descriptions_come_from_the_first_docstring_paragraph() -> None:
    job = _job()
    assert job["description"] == "Daily sales per region."
    assert _tasks(job)["extract"]["description"] == "Read raw sales."
    assert "description" not in _tasks(job)["clean"]


def test_serverless_jobs_share_an_environment_with_the_wheel() -> None:
    job = _job()
    assert job["environments"] == [
        {
            "environment_key": "default",
            "spec": {"environment_version": "3", "dependencies": [FRAMEWORK, "./dist/*.whl"]},
        }
    ]
    assert "job_clusters" not in job
    for spec in job["tasks"]:
        assert spec["environment_key"] == "default"
        assert "libraries" not in spec


def test_classic_jobs_use_the_job_cluster_and_install_the_wheel() -> None:
    job = _job(cluster=SMALL)
    assert job["job_clusters"] == [
        {
            "job_cluster_key": "small",
            "new_cluster": {
                "spark_version": "16.4.x-scala2.12",
                "node_type_id": "i3.xlarge",
                "num_workers": 2,
            },
        }
    ]
    assert "environments" not in job
    for spec in job["tasks"]:
        assert spec["job_cluster_key"] == "small"
        assert spec["libraries"] == [{"whl": FRAMEWORK}, {"whl": "./dist/*.whl"}]


def test_extra_libraries_follow_the_wheel_on_classic_compute() -> None:
    registry = Registry()

    @registry.job(cluster=SMALL)
    def lib_job() -> None:
        @task(libraries=[{"pypi": {"package": "requests==2.32.3"}}])
        def fetch() -> None: ...

        fetch()

    spec = job_resource(registry.get("lib_job"), package_name="lib-pkg")["tasks"][0]
    assert spec["libraries"] == [
        {"whl": FRAMEWORK},
        {"whl": "./dist/*.whl"},
        {"pypi": {"package": "requests==2.32.3"}},
    ]


def test_libraries_on_serverless_tasks_are_rejected() -> None:
    registry = Registry()

    @registry.job
    def lib_job() -> None:
        @task(libraries=[{"pypi": {"package": "requests"}}])
        def fetch() -> None: ...

        fetch()

    with pytest.raises(DefinitionError, match="job 'lib_job', task 'fetch': serverless"):
        job_resource(registry.get("lib_job"))


# -- schedule, concurrency, tags ----------------------------------------------------------------


def test_schedule_is_quartz_in_the_backfill_time_zone() -> None:
    job = _job(
        backfill=DailyBackfill("2024-01-01", tz="Europe/Berlin"), schedule="0 30 6 ? * MON-FRI"
    )
    assert job["schedule"] == {
        "quartz_cron_expression": "0 30 6 ? * MON-FRI",
        "timezone_id": "Europe/Berlin",
    }


def test_paused_schedules_option() -> None:
    registry = Registry()
    _pipeline(registry, schedule="0 0 6 * * ?")
    job = job_resource(registry.get("sales"), pause_schedules=True)
    assert job["schedule"]["pause_status"] == "PAUSED"


def test_backfill_jobs_allow_concurrent_runs_and_queue_by_default() -> None:
    assert _job(backfill=DailyBackfill("2024-01-01"))["max_concurrent_runs"] == 10
    assert _job()["max_concurrent_runs"] == 1
    assert _job()["queue"] == {"enabled": True}
    overridden = _job(max_concurrent_runs=3, queue={"enabled": False})
    assert overridden["max_concurrent_runs"] == 3
    assert overridden["queue"] == {"enabled": False}


def test_tags_hold_user_tags_and_the_backfill_definition() -> None:
    job = _job(
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
        _job(tags=tags)
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

    tasks = _tasks(job_resource(registry.get("regions")))
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
    assert inner["python_wheel_task"]["named_parameters"]["dbxdec_task"] == "load"
    assert inner["python_wheel_task"]["named_parameters"]["dbxdec_input"] == "{{input}}"
    assert json.loads(tasks["report"]["for_each_task"]["inputs"]) == ["us", "eu"]
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
    first = json.dumps(_job(params={"a": "1"}, backfill=DailyBackfill("2024-01-01")))
    second = json.dumps(_job(params={"a": "1"}, backfill=DailyBackfill("2024-01-01")))
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


JOB_SHAPES = {
    "serverless-daily": {"params": {"source": "raw"}, "backfill": DailyBackfill("2024-01-01")},
    "classic-hourly": {
        "cluster": SMALL,
        "backfill": HourlyBackfill("2024-01-01T00", tz="Asia/Kolkata", lookback=3),
        "schedule": "0 5 * * * ?",
    },
    "static": {"backfill": StaticBackfill(["us", "eu", "jp"]), "tags": {"owner": "a@b.c"}},
    "plain-scheduled": {"schedule": "0 0 6 ? * MON#1", "max_concurrent_runs": 2},
    "variables": {"params": {"catalog": "${var.catalog}"}, "cluster": SMALL},
}


@pytest.mark.parametrize("shape", list(JOB_SHAPES), ids=list(JOB_SHAPES))
def test_generated_jobs_pass_the_typed_load_and_the_bundle_schema(
    shape: str, schema: SchemaValidator
) -> None:
    job = _job(**JOB_SHAPES[shape])
    assert typed_problems("sales", job) == []
    assert schema.problems("sales", job) == []


_PARAM_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,20}", fullmatch=True).filter(
    lambda n: (
        not n.startswith("dbxdec_")
        and n not in {"backfill_key", "backfill_start_key", "backfill_exact", "backfill_run_time"}
    )
)


@given(names=st.lists(_PARAM_NAMES, min_size=1, max_size=5, unique=True))
def test_any_valid_parameter_names_are_pushed_down_to_every_task(names: list[str]) -> None:
    registry = Registry()
    _pipeline(registry, params={n: f"default-{n}" for n in names})
    job = job_resource(registry.get("sales"))
    assert [p["name"] for p in job["parameters"]] == names
    for spec in job["tasks"]:
        named = spec["python_wheel_task"]["named_parameters"]
        for name in names:
            match = re.fullmatch(r"\{\{job\.parameters\.(`?)(.+)\1\}\}", named[name])
            assert match is not None and match.group(2) == name
    assert typed_problems("sales", job) == []
