"""The generated ``dbxdec_controller`` job (issue 28): its settings pass the typed load,
the bundle schema and the Databricks CLI's ``load_resources`` phase."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from databricks_bundle_decorators.bundle import SchemaValidator, typed_problems
from databricks_bundle_decorators.bundle.workflows import (
    BundleValidationError,
    generate_project,
    open_project,
    validate_project,
)

from .projects import DAILY_PIPELINE, fake_framework_wheel, make_project, schema_path
from .test_load import _build

CONTROLLER = """
[tool.dbxdec.controller]
run_as_service_principal = "6b1d7a52-1f0e-4c1e-9a7c-1d2f3e4a5b6c"
secret_scope = "dbxdec-controller"
"""


def _controller(root: Path) -> dict[str, object]:
    text = (root / "resources" / "dbxdec_controller.job.yml").read_text(encoding="utf-8")
    job: dict[str, object] = yaml.safe_load(text)["resources"]["jobs"]["dbxdec_controller"]
    return job


def test_the_controller_job_is_generated_with_its_documented_settings(tmp_path: Path) -> None:
    make_project(tmp_path, DAILY_PIPELINE, tool=CONTROLLER)
    fake_framework_wheel(tmp_path / "wheels")
    generate_project(open_project(tmp_path))
    job = _controller(tmp_path)
    (task,) = job["tasks"]  # type: ignore[misc]
    assert task["python_wheel_task"] == {
        "package_name": "dbxdec",
        "entry_point": "dbxdec-controller",
        "named_parameters": {
            "run_id": "{{job.run_id}}",
            "controller_job_id": "{{job.id}}",
            "secret_scope": "dbxdec-controller",
        },
    }
    assert (task["max_retries"], task["retry_on_timeout"]) == (-1, True)
    assert job["parameters"] == [
        {"name": n, "default": ""} for n in ("backfill_id", "job_id", "generation")
    ]
    assert job["max_concurrent_runs"] == 100 and job["queue"] == {"enabled": True}
    # the timeout sits on the task, beside retry_on_timeout (issue 39 item 4): a job-level
    # timeout would end the run for good
    assert task["timeout_seconds"] > 3 * 3600 and "timeout_seconds" not in job
    assert job["run_as"] == {"service_principal_name": "6b1d7a52-1f0e-4c1e-9a7c-1d2f3e4a5b6c"}
    assert typed_problems("dbxdec_controller", job) == []
    assert SchemaValidator(schema_path()).problems("dbxdec_controller", job) == []
    assert validate_project(open_project(tmp_path), schema_path()).problems == ()
    text = (tmp_path / "resources" / "dbxdec_controller.job.yml").read_text()
    assert "token" not in text.lower() and "secret_scope: dbxdec-controller" in text


def test_no_backfill_no_controller_job(tmp_path: Path) -> None:
    make_project(tmp_path, "from databricks_bundle_decorators import job, task\n"
                 "@task\ndef t(): pass\n@job(name='JOBPREFIX_plain')\ndef plain():\n    t()\n")  # fmt: skip
    fake_framework_wheel(tmp_path / "wheels")
    generate_project(open_project(tmp_path))
    assert not (tmp_path / "resources" / "dbxdec_controller.job.yml").exists()


def test_a_bad_controller_setting_is_one_line(tmp_path: Path) -> None:
    make_project(tmp_path, DAILY_PIPELINE, tool="\n[tool.dbxdec.controller]\nrun_as = 'x'\n")
    fake_framework_wheel(tmp_path / "wheels")
    with pytest.raises(BundleValidationError, match=r"\[tool.dbxdec.controller\] run_as: unknown"):
        generate_project(open_project(tmp_path))


@pytest.mark.slow
def test_the_cli_load_phase_adds_the_controller_job(tmp_path: Path) -> None:
    make_project(tmp_path, DAILY_PIPELINE, tool=CONTROLLER)
    code, output, diagnostics, stderr = _build(tmp_path, tmp_path / "io", "dev", {})
    assert [d for d in diagnostics if d.get("severity") == "error"] == [], stderr
    assert code == 0
    job = output["resources"]["jobs"]["dbxdec_controller"]
    assert job["tasks"][0]["python_wheel_task"]["entry_point"] == "dbxdec-controller"
    assert SchemaValidator(schema_path()).problems("dbxdec_controller", job) == []


def test_dbxdec_declares_the_controller_entry_point_the_job_runs() -> None:
    """A wheel task's ``entry_point`` is looked up in the package's metadata (databricks-sdk
    ``PythonWheelTask.entry_point``): dbxdec's own wheel must declare ``dbxdec-controller``."""
    from importlib.metadata import entry_points

    from databricks_bundle_decorators.launch.control import entry

    (found,) = entry_points(group="console_scripts", name="dbxdec-controller")
    assert found.load() is entry.main
