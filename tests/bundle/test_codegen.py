"""Job settings generated from definitions (bundle/codegen.py)."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators import (
    DailyBackfill,
    Registry,
    task,
)
from databricks_bundle_decorators.bundle import (
    CodegenOptions,
    SchemaValidator,
    job_resource,
    parameter_reference,
)
from databricks_bundle_decorators.errors import DefinitionError

from .codegen_jobs import FRAMEWORK, SMALL, pipeline, sales_job, tasks_of
from .projects import schema_path


@pytest.fixture(scope="module")
def schema() -> SchemaValidator:
    return SchemaValidator(schema_path())


# -- contract 1: the python wheel task --------------------------------------------------------


def test_backfill_job_tasks_leave_job_parameters_to_pushdown() -> None:
    """Job parameters reach a keyword wheel task by pushdown
    (https://docs.databricks.com/aws/en/jobs/job-parameters): a task names only dbxdec's
    own parameters, with its task key, and repeats none of the job's."""
    job = sales_job(params={"source": "raw"}, backfill=DailyBackfill("2024-01-01"))
    wheel = tasks_of(job)["clean"]["python_wheel_task"]
    assert wheel == {
        "package_name": "sales-pkg",
        "entry_point": "dbxdec-run",
        "named_parameters": {
            "dbxdec_job": "sales",
            "dbxdec_task": "clean",
            "dbxdec_module": "tests.bundle.codegen_jobs",
            "dbxdec_run_id": "{{job.run_id}}-{{job.repair_count}}",
            "dbxdec_task_run_id": "{{task.run_id}}",
        },
    }
    job_parameters = {p["name"] for p in job["parameters"]}
    assert {"source", "backfill_key"} <= job_parameters
    for spec in job["tasks"]:
        assert not job_parameters & set(spec["python_wheel_task"]["named_parameters"])


def test_job_parameters_have_defaults_and_backfill_parameters_follow_user_ones() -> None:
    job = sales_job(params={"source": "raw", "limit": 10}, backfill=DailyBackfill("2024-01-01"))
    assert job["parameters"] == [
        {"name": "source", "default": "raw"},
        {"name": "limit", "default": "10"},
        {"name": "backfill_key", "default": ""},
        {"name": "backfill_start_key", "default": ""},
        {"name": "backfill_exact", "default": "false"},
        {"name": "backfill_run_time", "default": "{{job.trigger.time.timestamp_ms}}"},
        {"name": "dbxdec_order", "default": ""},
    ]


def test_a_job_without_backfill_or_params_has_no_parameters() -> None:
    job = sales_job()
    assert "parameters" not in job
    assert set(tasks_of(job)["extract"]["python_wheel_task"]["named_parameters"]) == {
        "dbxdec_job",
        "dbxdec_task",
        "dbxdec_module",
        "dbxdec_run_id",
        "dbxdec_task_run_id",
    }


def test_option_params_replace_declared_defaults_only() -> None:
    registry = Registry()
    pipeline(registry, params={"catalog": "main"})
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
    job = sales_job()
    tasks = tasks_of(job)
    assert [t["task_key"] for t in job["tasks"]] == ["extract", "clean", "audit"]
    assert "depends_on" not in tasks["extract"]
    assert tasks["clean"]["depends_on"] == [{"task_key": "extract"}]
    assert tasks["audit"]["depends_on"] == [{"task_key": "extract"}]


def test_retries_and_timeout_map_to_task_settings() -> None:
    extract = tasks_of(sales_job())["extract"]
    assert extract["max_retries"] == 3
    assert extract["min_retry_interval_millis"] == 5_000
    assert extract["retry_on_timeout"] is True
    assert extract["timeout_seconds"] == 1800
    assert "max_retries" not in tasks_of(sales_job())["clean"]


def test_descriptions_come_from_the_first_docstring_paragraph() -> None:
    job = sales_job()
    assert job["description"] == "Daily sales per region."
    assert tasks_of(job)["extract"]["description"] == "Read raw sales."
    assert "description" not in tasks_of(job)["clean"]


def test_serverless_jobs_share_an_environment_with_the_wheel() -> None:
    job = sales_job()
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
    job = sales_job(cluster=SMALL)
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
