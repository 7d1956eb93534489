"""``dbxdec generate`` adds the deadline monitor job of a job that asks for one: a wheel
task of dbxdec's own ``dbxdec-monitor`` entry point with the user's notifications, valid
against the bundle schema and the typed load."""

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

from .projects import fake_framework_wheel, make_project, schema_path

PIPELINE = """\
from datetime import timedelta

from databricks_bundle_decorators import (
    DailyBackfill, Deadline, DeadlineMonitor, HourlyBackfill, job, job_cluster, task,
)

@task
def load():
    ...

@job(
    name="JOBPREFIX_sales",
    backfill=DailyBackfill("2024-01-01", tz="Europe/Amsterdam"),
    schedule="0 0 6 * * ?",
    deadline=Deadline(
        "09:00",
        monitor=DeadlineMonitor(
            "main.ops.deadline_alerts",
            email_notifications={"on_failure": ["data@example.com"]},
            webhook_notifications={"on_failure": [{"id": "0481e838-0a59-4eff-9541-a4ca6f149574"}]},
        ),
    ),
)
def sales():
    load()

@job(
    name="JOBPREFIX_clicks",
    backfill=HourlyBackfill("2024-01-01T00"),
    cluster=job_cluster("small", spark_version="16.4.x-scala2.12", num_workers=1),
    deadline=Deadline(
        after=timedelta(minutes=90),
        monitor=DeadlineMonitor(
            "main.ops.deadline_alerts", "0 */15 * * * ?",
            email_notifications={"on_failure": ["web@example.com"]},
        ),
    ),
)
def clicks():
    load()

@job(name="JOBPREFIX_quiet", backfill=DailyBackfill("2024-01-01"), deadline=Deadline("07:30"))
def quiet():
    load()
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("monitor")
    project = make_project(root, PIPELINE)
    fake_framework_wheel(root / "wheels")
    generate_project(open_project(root))
    return root, project.prefix


def _job(root: Path, name: str) -> dict[str, object]:
    text = (root / "resources" / f"{name}.job.yml").read_text(encoding="utf-8")
    job: dict[str, object] = yaml.safe_load(text)["resources"]["jobs"][name]
    return job


def test_a_monitor_job_is_generated_beside_each_job_that_asks(generated: tuple[Path, str]) -> None:
    root, prefix = generated
    files = sorted(p.name for p in (root / "resources").glob("*.job.yml"))
    assert files == sorted(  # and the controller of detached backfills (issue 28)
        [f"{prefix}{name}.job.yml"
         for name in ("sales", "sales__deadline_monitor", "clicks", "clicks__deadline_monitor",
                      "quiet")] + ["dbxdec_controller.job.yml"]
    )  # fmt: skip
    monitor = _job(root, f"{prefix}sales__deadline_monitor")
    (task,) = monitor["tasks"]  # type: ignore[misc]
    assert task["python_wheel_task"] == {
        "package_name": "dbxdec",
        "entry_point": "dbxdec-monitor",
        "named_parameters": {"dbxdec_job": f"{prefix}sales", "dbxdec_module": task[
            "python_wheel_task"]["named_parameters"]["dbxdec_module"]},
    }  # fmt: skip
    assert monitor["schedule"] == {
        "quartz_cron_expression": "0 0 * * * ?",
        "timezone_id": "Europe/Amsterdam",
    }
    assert monitor["parameters"] == [
        {"name": "backfill_run_time", "default": "{{job.trigger.time.timestamp_ms}}"}
    ]
    assert monitor["email_notifications"] == {"on_failure": ["data@example.com"]}
    assert monitor["webhook_notifications"] == {
        "on_failure": [{"id": "0481e838-0a59-4eff-9541-a4ca6f149574"}]
    }
    assert monitor["max_concurrent_runs"] == 1
    clicks = _job(root, f"{prefix}clicks__deadline_monitor")
    (ctask,) = clicks["tasks"]  # type: ignore[misc]
    assert ctask["job_cluster_key"] == "small" and ctask["libraries"][0]["whl"].endswith(".whl")
    assert clicks["schedule"]["timezone_id"] == "UTC"  # type: ignore[index]


def test_the_monitor_jobs_pass_the_typed_load_and_the_bundle_schema(
    generated: tuple[Path, str],
) -> None:
    root, prefix = generated
    validator = SchemaValidator(schema_path())
    for name in ("sales__deadline_monitor", "clicks__deadline_monitor"):
        job = _job(root, f"{prefix}{name}")
        assert typed_problems(name, job) == []
        assert validator.problems(name, job) == []
    report = validate_project(open_project(root), schema_path())
    assert report.problems == () and report.jobs == 3


def test_a_bad_notification_setting_is_a_schema_problem(tmp_path: Path) -> None:
    """The notifications are the user's: the bundle schema judges them (an on_failure
    that is not a list of addresses)."""
    source = PIPELINE.replace('{"on_failure": ["web@example.com"]}', '{"on_failure": "web"}')
    make_project(tmp_path, source)
    fake_framework_wheel(tmp_path / "wheels")
    report = validate_project(open_project(tmp_path), schema_path())
    assert any(
        "clicks__deadline_monitor" in p and "email_notifications.on_failure" in p
        for p in report.problems
    ), report.problems
    with pytest.raises(BundleValidationError, match="nothing was written"):
        generate_project(open_project(tmp_path))


def test_load_resources_adds_the_monitor_job_too() -> None:
    from datetime import timedelta

    from databricks_bundle_decorators import (
        DailyBackfill,
        Deadline,
        DeadlineMonitor,
        Registry,
        task,
    )
    from databricks_bundle_decorators.bundle import CodegenOptions, resources_for

    from .test_load import as_dict

    registry = Registry()
    monitor = DeadlineMonitor("main.ops.alerts", email_notifications={"on_failure": ["a@b.co"]})

    @registry.job(
        backfill=DailyBackfill("2024-01-01"),
        deadline=Deadline(after=timedelta(hours=3), monitor=monitor),
    )
    def orders() -> None:
        @task
        def load() -> None: ...

        load()

    resources = resources_for(registry, CodegenOptions())
    assert list(resources.diagnostics.items) == []
    jobs = as_dict(resources)
    assert sorted(jobs) == ["orders", "orders__deadline_monitor"]
    wheel = jobs["orders__deadline_monitor"]["tasks"][0]["python_wheel_task"]
    assert (wheel["package_name"], wheel["entry_point"]) == ("dbxdec", "dbxdec-monitor")


def test_dbxdec_declares_the_monitor_entry_point_the_job_runs() -> None:
    """A wheel task's ``entry_point`` is looked up in the package's metadata (databricks-sdk
    ``PythonWheelTask.entry_point``): dbxdec's own wheel must declare ``dbxdec-monitor``."""
    from importlib.metadata import entry_points

    from databricks_bundle_decorators.runtime import monitor_entry

    (found,) = entry_points(group="console_scripts", name="dbxdec-monitor")
    assert found.dist is not None and found.dist.name == "dbxdec"
    assert found.load() is monitor_entry.main
