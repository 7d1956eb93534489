"""Where a job's check results table comes from: ``@job(check_results=...)`` or the
project's ``[tool.dbxdec] check_results``; codegen bakes it into every task (a cluster
does not read ``pyproject.toml``) and ``dbxdec-run`` takes it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators import DailyBackfill, Registry
from databricks_bundle_decorators.bundle.project import apply_check_results_default, load_config
from databricks_bundle_decorators.errors import DefinitionError, UsageError
from databricks_bundle_decorators.runtime.entrypoint import parse_arguments

from .codegen_jobs import pipeline, sales_job, tasks_of


def test_the_job_s_table_is_a_named_parameter_of_every_task_and_not_a_job_setting() -> None:
    job = sales_job(backfill=DailyBackfill("2024-01-01"), check_results="main.ops.results")
    assert "check_results" not in job
    for task in tasks_of(job).values():
        named = task["python_wheel_task"]["named_parameters"]
        assert named["dbxdec_check_results"] == "main.ops.results"
    plain = sales_job(backfill=DailyBackfill("2024-01-01"))
    assert all(
        "dbxdec_check_results" not in t["python_wheel_task"]["named_parameters"]
        for t in tasks_of(plain).values()
    )
    parsed = parse_arguments(
        ["--dbxdec_job=sales", "--dbxdec_task=clean", "--dbxdec_module=m",
         "--dbxdec_check_results=main.ops.results", "--backfill_key=2024-01-01"]
    )  # fmt: skip
    assert parsed.check_results == "main.ops.results"
    assert parsed.params == {"backfill_key": "2024-01-01"}


def test_a_bad_name_is_one_line_naming_the_job_or_the_project(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="check_results='results' must be a table name"):
        pipeline(Registry(), check_results="results")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dbxdec]\npipelines = ["x"]\ncheck_results = "main.ops.results"\n'
    )
    registry = Registry()
    pipeline(registry)
    pipeline(registry, name="own", check_results="main.own.results")
    apply_check_results_default(load_config(tmp_path), registry)
    assert registry.get("sales").check_results == "main.ops.results"
    assert registry.get("own").check_results == "main.own.results"  # the job's own wins
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dbxdec]\npipelines = ["x"]\ncheck_results = 3\n'
    )
    with pytest.raises(UsageError, match=r"\[tool.dbxdec\] in .*pyproject.toml: check_results=3"):
        apply_check_results_default(load_config(tmp_path), Registry())
