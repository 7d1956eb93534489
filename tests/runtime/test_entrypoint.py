"""``dbxdec-run``: argument parsing, job/task resolution, and a real subprocess run with
exactly the named parameters the generated Databricks job passes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.runtime.entrypoint import main, parse_arguments, resolve_run_id

REPO = Path(__file__).resolve().parents[2]
DBXDEC_RUN = Path(sys.executable).with_name("dbxdec-run")
names = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True).filter(
    lambda n: not n.startswith("dbxdec_")
)


@given(
    params=st.dictionaries(names, st.text(alphabet=st.characters(exclude_categories=["Cs"]))),
    seed=st.randoms(),
)
def test_named_parameters_round_trip_in_any_order(params: dict[str, str], seed: Any) -> None:
    args = [f"--{k}={v}" for k, v in params.items()]
    args += ["--dbxdec_job=j", "--dbxdec_task=t", "--dbxdec_module=m"]
    seed.shuffle(args)
    parsed = parse_arguments(args)
    assert (parsed.job, parsed.task, parsed.module, parsed.params) == ("j", "t", "m", params)


def test_repeated_name_last_wins_and_values_may_contain_equals() -> None:
    parsed = parse_arguments(
        ["--dbxdec_job=j", "--dbxdec_task=t", "--dbxdec_module=m", "--a=1", "--a=x=y", "--b="]
    )
    assert parsed.params == {"a": "x=y", "b": ""}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dbxdec_job=j"], "dbxdec-run needs --dbxdec_task, --dbxdec_module"),
        (["positional"], "unexpected argument 'positional'"),
        (["--dbxdec_job"], "argument --dbxdec_job has no value"),
    ],
)
def test_bad_arguments(args: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_arguments(args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--dbxdec_job=sales_pipelin", "--dbxdec_task=x"],
            "Error: module databricks_bundle_decorators.examples.sales_pipeline defines no job 'sales_pipelin'. Did you mean "
            "'sales_pipeline'? Jobs: sales_pipeline",
        ),
        (
            ["--dbxdec_job=sales_pipeline", "--dbxdec_task=clean"],
            "Error: job 'sales_pipeline' has no task 'clean'. Tasks: generate_events, "
            "clean_events, daily_revenue, region_totals",
        ),
        (
            ["--dbxdec_job=sales_pipeline", "--dbxdec_task=clean_events", "--region=eu"],
            "Error: job 'sales_pipeline' has no parameter 'region'. Parameters: backfill_exact, "
            "backfill_key, backfill_run_time, backfill_start_key, dbxdec_order, events_per_day, "
            "seed",
        ),
        (
            [
                "--dbxdec_job=sales_pipeline",
                "--dbxdec_task=clean_events",
                "--backfill_key=2023-01-01",
            ],
            "Error: job 'sales_pipeline': backfill_key '2023-01-01' is before the backfill's "
            "start_date '2024-01-01'",
        ),
        (
            [
                "--dbxdec_job=sales_pipeline",
                "--dbxdec_task=clean_events",
                "--backfill_run_time={{job.trigger.time.timestamp_ms}}",
            ],
            "Error: job 'sales_pipeline': job parameter "
            "backfill_run_time='{{job.trigger.time.timestamp_ms}}' (a Databricks reference that "
            "was not rendered) is not a time: expected epoch milliseconds, an ISO datetime (with "
            "offset or Z; without one it is UTC) or an ISO date",
        ),
    ],
)
def test_unknown_job_task_or_parameter_exits_2_listing_what_exists(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--dbxdec_module=databricks_bundle_decorators.examples.sales_pipeline", *args])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip() == message


def test_missing_module(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "--dbxdec_module=databricks_bundle_decorators.examples.nope",
                "--dbxdec_job=j",
                "--dbxdec_task=t",
            ]
        )
    assert exited.value.code == 2
    assert "module not found" in capsys.readouterr().err


def _resolve(value: str, run_params: dict[str, str]) -> str:
    """Substitute ``{{job.parameters.X}}``, ``{{job.run_id}}``, ``{{job.repair_count}}`` and
    the trigger time the way Databricks does at run time."""
    value = re.sub(r"\{\{job\.parameters\.([\w.-]+)\}\}", lambda m: run_params[m.group(1)], value)
    value = value.replace("{{job.run_id}}", "run").replace("{{job.repair_count}}", "1")
    return value.replace("{{job.trigger.time.timestamp_ms}}", "1707566400000")  # 2024-02-10


def _task_args(resource: dict[str, Any], task_key: str, run_params: dict[str, str]) -> list[str]:
    (task,) = [t for t in resource["tasks"] if t["task_key"] == task_key]
    wheel = task.get("python_wheel_task")
    if wheel is None:  # a task-value task: its notebook runs the same entry with these
        named = task["notebook_task"]["base_parameters"]
    else:
        assert wheel["entry_point"] == "dbxdec-run"
        named = wheel["named_parameters"]
    # Databricks pushes the job parameters down to a keyword wheel task (and to a notebook
    # task's widgets), over a task parameter of the same key
    # (https://docs.databricks.com/aws/en/jobs/job-parameters).
    named = {**named, **run_params}
    return [f"--{name}={_resolve(value, run_params)}" for name, value in named.items()]


@pytest.mark.slow
@pytest.mark.spark
def test_dbxdec_run_subprocess_with_generated_named_parameters(spark: Any, warehouse: Path) -> None:
    from databricks_bundle_decorators.bundle.codegen import job_resource
    from databricks_bundle_decorators.examples.sales_pipeline import sales_pipeline

    resource = job_resource(sales_pipeline)
    defaults = {p["name"]: p["default"] for p in resource["parameters"]}
    run_params = {**defaults, "backfill_key": "2024-02-10", "events_per_day": "400"}
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DBXDEC_WAREHOUSE": str(warehouse),
        "DBXDEC_SPARK_MASTER": "local[1]",
    }
    env.pop("DATABRICKS_RUNTIME_VERSION", None)
    env.pop("DBXDEC_RUN_ID", None)  # the run id comes from the rendered --dbxdec_run_id
    for task_key in ("generate_events", "clean_events"):
        args = _task_args(resource, task_key, run_params)
        done = subprocess.run(
            [str(DBXDEC_RUN), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
    raw = spark.read.format("delta").load(str(warehouse / "main/dbxdec_demo/sales_raw"))
    clean = spark.read.format("delta").load(str(warehouse / "main/dbxdec_demo/sales_clean"))
    assert {r.event_date for r in raw.select("event_date").distinct().collect()} == {"2024-02-10"}
    assert 0 < clean.count() < raw.count()
    assert (warehouse.parent / "task_values/run-1/generate_events.json").read_text() == (
        '{"days": ["2024-02-10"]}'
    )
    # The commit's transaction id (a ``txn`` action of the Delta log) names the run.
    log = spark.read.json(f"{warehouse}/main/dbxdec_demo/sales_raw/_delta_log/*.json")
    app_ids = [r.appId for r in log.where("txn IS NOT NULL").select("txn.appId").collect()]
    assert app_ids == ["dbxdec:sales_pipeline:generate_events:run-1"]
    # An unknown task fails before Spark starts, listing the job's tasks.
    args = _task_args(resource, "clean_events", run_params)
    args.append("--dbxdec_task=cleaning")
    done = subprocess.run(
        [str(DBXDEC_RUN), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "has no task 'cleaning'. Did you mean 'clean_events'?" in done.stderr


def test_for_each_iteration_receives_its_element_from_dbxdec_input(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Databricks runs each iteration task with the element as ``{{input}}``."""
    from databricks_bundle_decorators.bundle.codegen import job_resource
    from tests.runtime import foreach_pipeline

    monkeypatch.setenv("DBXDEC_WAREHOUSE", str(tmp_path / "warehouse"))
    resource = job_resource(foreach_pipeline.fan_out)
    (loop,) = resource["tasks"]
    nested = loop["for_each_task"]["task"]
    named = nested["python_wheel_task"]["named_parameters"]
    assert named["dbxdec_input"] == "{{input}}"
    foreach_pipeline.SEEN.clear()
    with pytest.raises(SystemExit) as exited:
        main([f"--{name}={value.replace('{{input}}', 'eu')}" for name, value in named.items()])
    assert exited.value.code == 0
    assert foreach_pipeline.SEEN == ["eu"]  # one iteration, not the whole list


def test_dbxdec_input_rejected_for_plain_task(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "--dbxdec_module=databricks_bundle_decorators.examples.sales_pipeline",
                "--dbxdec_job=sales_pipeline",
                "--dbxdec_task=clean_events",
                "--dbxdec_input=eu",
            ]
        )
    assert exited.value.code == 2
    assert "only for for-each tasks" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("given", "env", "databricks", "expected"),
    [
        ("550315892394120", "from-env", True, "550315892394120"),
        (None, "from-env", True, "from-env"),
        ("{{job.run_id}}", "", True, ""),
        (None, "", True, ""),
        ("{{job.run_id}}", "from-env", False, "from-env"),
    ],
    ids=[
        "parameter-wins",
        "env-fallback",
        "unrendered-on-databricks",
        "none",
        "unrendered-locally",
    ],
)
def test_run_id_comes_from_dbxdec_run_id_then_the_environment(
    monkeypatch: pytest.MonkeyPatch, given: str | None, env: str, databricks: bool, expected: str
) -> None:
    monkeypatch.setenv("DBXDEC_RUN_ID", env)
    assert resolve_run_id(given, databricks=databricks) == expected
    args = ["--dbxdec_job=j", "--dbxdec_task=t", "--dbxdec_module=m", "--dbxdec_run_id=42", "--a=1"]
    parsed = parse_arguments(args)
    assert parsed.run_id == "42" and parsed.params == {"a": "1"}


def test_without_any_run_id_a_local_run_gets_a_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DBXDEC_RUN_ID", raising=False)
    first, second = (resolve_run_id(None, databricks=False) for _ in range(2))
    assert first and second and first != second
