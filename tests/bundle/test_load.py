"""load_resources, as the Databricks CLI runs it (bundle/load.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import Registry, __version__, task
from databricks_bundle_decorators.bundle import CodegenOptions, SchemaValidator, resources_for

from .projects import DAILY_PIPELINE, REPO_ROOT, make_project, schema_path


def as_dict(resources: Any) -> dict[str, Any]:
    return {name: job.as_dict() for name, job in resources.jobs.items()}


def _build(
    root: Path, work: Path, target: str, variables: dict[str, Any]
) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    """Run the load_resources phase exactly as the Databricks CLI does, in bundle ``root``;
    the exchange files live in ``work``."""
    document = {
        "bundle": {"name": "test", "target": target},
        "python": {"resources": ["databricks_bundle_decorators.bundle:load_resources"]},
        "variables": {name: {"value": value} for name, value in variables.items()},
    }
    work.mkdir(parents=True, exist_ok=True)
    (work / "in.json").write_text(json.dumps(document), encoding="utf-8")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "databricks.bundles.build",
            "--phase",
            "load_resources",
            "--input",
            str(work / "in.json"),
            "--output",
            str(work / "out.json"),
            "--diagnostics",
            str(work / "diag.json"),
            "--locations",
            str(work / "locations.json"),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    diagnostics = [
        json.loads(line)
        for line in (work / "diag.json").read_text(encoding="utf-8").splitlines()
        if line
    ]
    output = json.loads((work / "out.json").read_text(encoding="utf-8"))
    return completed.returncode, output, diagnostics, completed.stderr


@pytest.mark.slow
def test_the_cli_phase_loads_every_job_with_no_error_diagnostics(tmp_path: Path) -> None:
    p = make_project(tmp_path, DAILY_PIPELINE, tool='params = { catalog = "${var.catalog}" }\n')
    code, output, diagnostics, stderr = _build(tmp_path, tmp_path / "io", "dev", {"catalog": "dev"})
    assert [d for d in diagnostics if d.get("severity") == "error"] == [], stderr
    assert code == 0
    jobs = output["resources"]["jobs"]
    assert sorted(jobs) == ["dbxdec_controller", p.job("nightly"), p.job("sales")]  # issue 28
    sales = jobs[p.job("sales")]
    assert {"name": "catalog", "default": "dev"} in sales["parameters"]
    assert sales["tasks"][0]["python_wheel_task"]["package_name"] == "test-project"
    framework = f"./wheels/dbxdec-{__version__}-py3-none-any.whl"
    assert sales["environments"][0]["spec"]["dependencies"] == [framework, "./dist/*.whl"]
    nightly = jobs[p.job("nightly")]["tasks"][0]
    assert nightly["libraries"] == [{"whl": framework}, {"whl": "./dist/*.whl"}]
    validator = SchemaValidator(schema_path())
    for name, job in jobs.items():
        assert validator.problems(name, job) == []


@pytest.mark.slow
def test_the_cli_phase_reports_a_broken_module_as_a_diagnostic(tmp_path: Path) -> None:
    make_project(
        tmp_path, "from databricks_bundle_decorators import job\n\ndef broken(:\n    pass\n"
    )
    code, _, diagnostics, _ = _build(tmp_path, tmp_path / "io", "dev", {})
    assert code == 1
    [error] = [d for d in diagnostics if d["severity"] == "error"]
    assert "syntax error" in error["summary"]
    assert error["location"]["file"].endswith(".py") and error["location"]["line"] == 3, error


@pytest.mark.slow
def test_the_repository_bundle_loads(tmp_path: Path) -> None:
    code, output, diagnostics, stderr = _build(REPO_ROOT, tmp_path, "dev", {"catalog": "dev"})
    assert [d for d in diagnostics if d.get("severity") == "error"] == [], stderr
    assert code == 0
    validator = SchemaValidator(schema_path())
    for name, job in output["resources"]["jobs"].items():
        assert validator.problems(name, job) == []
        # The repository's wheel is dbxdec itself: no second (framework) wheel.
        assert job["environments"][0]["spec"]["dependencies"] == ["./dist/*.whl"]


def test_resources_for_turns_definition_errors_into_diagnostics() -> None:
    registry = Registry()

    @registry.job
    def good() -> None:
        @task
        def only() -> None: ...

        only()

    @registry.job(tags={"dbxdec_x": "1"})
    def reserved_tag() -> None:
        @task
        def only() -> None: ...

        only()

    @registry.job
    def cyclic() -> None:
        @task(depends_on=["second"])
        def first() -> None: ...

        @task(depends_on=[first])
        def second() -> None: ...

        first()
        second()

    @registry.job(max_concurent_runs=3)
    def typo() -> None:
        @task
        def only() -> None: ...

        only()

    resources = resources_for(registry, CodegenOptions())
    assert list(as_dict(resources)) == ["good"]
    messages = sorted(d.summary for d in resources.diagnostics.items)
    assert len(messages) == 3
    assert "job 'cyclic': dependency cycle" in messages[0] or any(
        "dependency cycle" in m for m in messages
    )
    assert any(m.startswith("job 'reserved_tag': tag 'dbxdec_x' is reserved") for m in messages)
    assert any(
        m.startswith("job 'typo', field 'max_concurent_runs': unknown setting") for m in messages
    )
    located = [d for d in resources.diagnostics.items if d.summary.startswith("job 'typo'")]
    assert located[0].location is not None and located[0].location.file == __file__
    assert located[0].path == ("resources", "jobs", "typo")
