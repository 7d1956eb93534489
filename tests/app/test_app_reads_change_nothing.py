"""A page view changes nothing: GETs never write to the workspace, not even to put back a
schedule an ended backfill left paused (``dbxdec status`` and a launch do that; a page
anyone may open, or a link another site embeds, must not)."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime, timezone

from databricks_bundle_decorators.launch.guard.pause.schedule_pause import local_markers
from databricks_bundle_decorators.launch.ledger.claims import this_host
from databricks_bundle_decorators.launch.ledger.marker import PauseMarker, ProcessHolder
from databricks_bundle_decorators.launch.plan.request import Connection
from databricks_bundle_decorators.launch.status.status import job_status

from .conftest import AppWorkspace

WRITES = ("create", "update", "reset", "run-now", "cancel", "import", "delete", "mkdirs")


def leave_a_stale_pause(app_workspace: AppWorkspace) -> None:
    """The schedule of job nightly paused by a local backfill whose process is gone."""
    emu, job_id = app_workspace.emu, app_workspace.job_id
    client = emu.workspace_client()
    from databricks.sdk.service.jobs import CronSchedule, JobSettings, PauseStatus

    schedule = CronSchedule("0 0 2 * * ?", "UTC", pause_status=PauseStatus.PAUSED)
    client.jobs.update(job_id, new_settings=JobSettings(schedule=schedule))
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    holder = ProcessHolder(this_host(), int(gone.stdout), "stale-hold")
    marker = PauseMarker("nightly", job_id, {"schedule": "UNPAUSED"}, holder, time.time(), emu.url)
    local_markers(app_workspace.root, "nightly", job_id, "--pause-schedule").write(marker)


def writes(app_workspace: AppWorkspace) -> dict[str, int]:
    return {p: n for p, n in app_workspace.emu.requests.items() if p.rsplit("/", 1)[-1] in WRITES}


def paused(app_workspace: AppWorkspace) -> str:
    schedule = app_workspace.emu.workspace_client().jobs.get(app_workspace.job_id).settings.schedule
    assert schedule is not None and schedule.pause_status is not None
    return schedule.pause_status.value


def test_no_page_view_writes_to_the_workspace(app_workspace: AppWorkspace) -> None:
    leave_a_stale_pause(app_workspace)
    before = writes(app_workspace)
    app = app_workspace.client()
    for path in ("/", "/jobs", "/jobs/nightly", "/jobs/nightly?month=2024-01", "/launch"):
        assert app.get(path).status == 200, path
    assert writes(app_workspace) == before
    assert paused(app_workspace) == "PAUSED"


def test_the_check_can_fail_a_status_read_that_restores_writes(app_workspace: AppWorkspace) -> None:
    """What the app must not do, done by ``dbxdec status``'s read: the check sees it."""
    leave_a_stale_pause(app_workspace)
    before = writes(app_workspace)
    job = app_workspace_job(app_workspace)
    now = datetime.now(timezone.utc)
    job_status(job, Connection(host=app_workspace.emu.url), root=app_workspace.root, now=now)
    assert writes(app_workspace) != before
    assert paused(app_workspace) == "UNPAUSED"


def app_workspace_job(app_workspace: AppWorkspace):  # type: ignore[no-untyped-def]
    from databricks_bundle_decorators.bundle.project import load_project

    _, registry = load_project(app_workspace.root)
    return registry.get("nightly")
