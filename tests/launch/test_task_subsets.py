"""``dbxdec backfill --tasks/--skip-tasks``: some of a job's tasks per key, on real local
Delta tables (the other tasks' tables are read, never written, and a key missing from
them fails before the task runs) and on the Jobs API emulator (run-now's ``only``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill.wire import task_order
from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import BACKFILL_PARAMS

from .undo_project import table_history, table_rows

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = pytest.mark.connect_lane

MODULE = "subset_test_pipelines"
PIPELINES = """
from databricks_bundle_decorators import DailyBackfill, job, params, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

DAYS = DailyBackfill("2024-01-01", "2024-01-31")


def _frame(rows, schema):
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate().createDataFrame(rows, schema)


@job(params={"label": "first"}, backfill=DAYS)
def three_steps():
    @task(io_manager=SparkTableIoManager("main.subset.raw", partition_column="day"))
    def extract():
        return _frame([(k, n) for k in get_written_keys() for n in range(3)], "day string, n int")

    @task(io_manager=SparkTableIoManager("main.subset.clean", partition_column="day"))
    def clean(raw):
        return raw.where("n < 2")

    @task(io_manager=SparkTableIoManager("main.subset.summary", partition_column="day"))
    def summary(clean):
        from pyspark.sql import functions as F

        return clean.groupBy("day").agg(F.count("*").alias("rows")).withColumn(
            "label", F.lit(params["label"])
        )

    summary(clean(extract()))
"""
FIVE_DAYS = ("--start", "2024-01-01", "--end", "2024-01-05")
TASKS = [{"task_key": key} for key in ("extract", "clean", "summary")]


def write_subset_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "subsetproj"\nversion = "0.1"\n\n'
        f'[tool.dbxdec]\npipelines = ["{MODULE}"]\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    return root


def dbxdec(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main([*args, "--project", str(root)])
    out, err = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), out + err


def versions(spark: Any, root: Path) -> dict[str, int]:
    return {
        name: len(table_history(spark, root, f"main.subset.{name}"))
        for name in ("raw", "clean", "summary")
    }


@pytest.mark.spark
def test_tasks_reruns_only_the_last_task_and_a_missing_upstream_key_fails_first(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_subset_project(tmp_path / "proj")
    local = ("--local", "--poll-interval", "0.05")
    code, out = dbxdec(
        capsys, root, "backfill", "three_steps", *FIVE_DAYS, "--batch-size", "5", *local
    )
    assert code == 0, out
    before = versions(spark, root)
    assert before == {"raw": 1, "clean": 1, "summary": 1}  # one ranged run, one commit each

    code, out = dbxdec(
        capsys, root, "backfill", "three_steps", *FIVE_DAYS, "--tasks", "summary",
        "--param", "label=second", "--batch-size", "2", *local,
    )  # fmt: skip
    assert code == 0, out
    # the upstream tables are untouched; the last one has one commit per run (3 runs)
    assert versions(spark, root) == {**before, "summary": 1 + 3}
    summary = table_rows(spark, root, "main.subset.summary")
    assert summary == [(f"2024-01-0{d}", 2, "second") for d in range(1, 6)]
    ledger = list_ledgers(root, "three_steps")[0]
    assert ledger.options.tasks == "summary"

    clean_path = root / ".dbxdec" / "warehouse" / "main" / "subset" / "clean"
    spark.sql(f"DELETE FROM delta.`{clean_path}` WHERE day = '2024-01-03'")
    code, out = dbxdec(
        capsys, root, "backfill", "three_steps", "--keys", "2024-01-02,2024-01-03",
        "--tasks", "summary", *local,
    )  # fmt: skip
    assert code == 1, out
    assert (
        "task 'summary' reads table main.subset.clean (written by task 'clean', which this "
        "run does not run), and the table has no rows for partition 2024-01-03; nothing was "
        "run"
    ) in out
    after = versions(spark, root)
    # clean: only the DELETE above; summary: 2024-01-02 ran, 2024-01-03 wrote nothing
    assert after == {"raw": 1, "clean": 2, "summary": 1 + 3 + 1}


def test_tasks_reach_run_now_as_only_and_dry_run_names_them(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    workspace_env: JobsEmulator,
) -> None:
    root = write_subset_project(tmp_path / "proj")
    emu = workspace_env
    params = {**BACKFILL_PARAMS, "label": "first", "dbxdec_order": ""}
    job_id = emu.create_job(
        "three_steps", parameters=params, max_concurrent_runs=5, settings={"tasks": TASKS}
    )
    fast = ("--poll-interval", "0.01")
    code, out = dbxdec(
        capsys, root, "backfill", "three_steps", *FIVE_DAYS, "--skip-tasks", "extract", "--dry-run"
    )
    assert code == 0, out
    assert "Each run runs only the tasks clean,summary" in out
    assert emu.run_now_bodies(job_id) == []

    code, out = dbxdec(
        capsys, root, "backfill", "three_steps", *FIVE_DAYS, "--tasks", "summary", *fast
    )
    assert code == 0, out
    bodies = emu.run_now_bodies(job_id)
    # A slow run-now is sent again with the same token (--resend-after): count tokens.
    assert len({body["idempotency_token"] for body in bodies}) == 5 == len(emu.runs(job_id))
    assert all(body["only"] == ["summary"] for body in bodies)
    assert {task_order(body["job_parameters"]).tasks for body in bodies} == {("summary",)}
    runs = emu.runs(job_id)
    assert all(len(run.task_run_ids) == 1 for run in runs)

    code, out = dbxdec(capsys, root, "backfill", "three_steps", "--keys", "2024-01-09", *fast)
    assert code == 0, out
    assert "only" not in emu.run_now_bodies(job_id)[-1]  # every task: no only

    code, out = dbxdec(capsys, root, "backfill", "three_steps", *FIVE_DAYS, "--tasks", "sumary")
    assert code == 2
    assert "--tasks: job 'three_steps' has no task 'sumary'. Did you mean 'summary'?" in out


def test_a_job_deployed_without_the_order_parameter_is_refused_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workspace_env: JobsEmulator
) -> None:
    root = write_subset_project(tmp_path / "proj")
    job_id = workspace_env.create_job(
        "three_steps", parameters={**BACKFILL_PARAMS, "label": "x"}, settings={"tasks": TASKS}
    )
    code, out = dbxdec(
        capsys, root, "backfill", "three_steps", "--keys", "2024-01-02", "--tasks", "clean"
    )
    assert code == 2
    assert "deployed without the dbxdec_order parameter" in out
    assert workspace_env.run_now_bodies(job_id) == []
