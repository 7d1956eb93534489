"""``--pause-schedule`` on a job whose table-update trigger waits for ALL its tables.

``jobs/get`` never returns ``trigger.table_update.condition`` (databricks/cli#6315; the
emulator follows it), and ``jobs/update`` replaces the trigger whole: a pause that wrote
back the trigger it read would turn ``ALL_UPDATED`` into the default, any table. The
pause writes the trigger the project declares, so the requests the workspace received
carry the condition, pausing and restoring.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.trigger_chain import written_trigger

from .clirun import FAST, NIGHTLY_PARAMS, Cli

PIPELINES = """\
from databricks_bundle_decorators import DailyBackfill, TableUpdate, job, source, task

A = source("main.s.a", event_time="ts")
B = source("main.s.b", event_time="ts")


@task
def step() -> None: ...


@job(
    backfill=DailyBackfill(start_date="2024-01-01"),
    triggered_by=TableUpdate([A, B], condition="ALL_UPDATED"),
)
def watcher() -> None:
    step()


@job(backfill=DailyBackfill(start_date="2024-01-01"))
def unwatched() -> None:
    step()
"""
DEPLOYED = {"table_update": {"table_names": ["main.s.a", "main.s.b"], "condition": "ALL_UPDATED"}}


@pytest.fixture
def project(tmp_path: Path, workspace_env: JobsEmulator) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "cond"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["cond_pipelines"]\n'
    )
    (root / "cond_pipelines.py").write_text(PIPELINES)
    return root


def test_pause_schedule_writes_the_declared_condition_back(dbxdec: Cli, emu: JobsEmulator) -> None:
    job_id = emu.create_job("watcher", parameters=NIGHTLY_PARAMS, settings={"trigger": DEPLOYED})
    assert "condition" not in emu.job_settings(job_id)["trigger"]["table_update"]  # as GET

    code, out, err = dbxdec(
        "backfill", "watcher", "--start", "2024-01-01", "--end", "2024-01-02",
        "--pause-schedule", *FAST,
    )  # fmt: skip

    assert code == 0, out + err
    updates = [b["new_settings"]["trigger"] for e, b in emu.job_change_bodies(job_id)[1:]]
    assert updates == [
        {**DEPLOYED, "pause_status": "PAUSED"},
        {**DEPLOYED, "pause_status": "UNPAUSED"},
    ]
    assert written_trigger(emu, job_id) == {**DEPLOYED, "pause_status": "UNPAUSED"}


def test_an_undeclared_table_update_trigger_is_paused_only_when_forced(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    """A trigger set in the workspace only: its condition cannot be read back, so the
    pause is refused in one line (nothing paused, no marker) unless forced, which warns."""
    job_id = emu.create_job("unwatched", parameters=NIGHTLY_PARAMS, settings={"trigger": DEPLOYED})
    args = ("backfill", "unwatched", "--start", "2024-01-01", "--end", "2024-01-02", *FAST)

    code, out, err = dbxdec(*args, "--pause-schedule")

    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert "does not declare" in line and "--force-trigger-pause" in line
    assert emu.job_change_bodies(job_id)[1:] == [] and emu.runs(job_id) == []
    assert not any((project / ".dbxdec" / "paused").rglob("*.json"))

    code, out, err = dbxdec(*args, "--pause-schedule", "--force-trigger-pause")

    assert code == 0, out + err
    assert "its condition is not restored" in out + err
    updates = [
        b["new_settings"]["trigger"]["pause_status"] for _, b in emu.job_change_bodies(job_id)[1:]
    ]
    assert updates == ["PAUSED", "UNPAUSED"]


def test_force_trigger_pause_needs_pause_schedule(dbxdec: Cli, emu: JobsEmulator) -> None:
    emu.create_job("unwatched", parameters=NIGHTLY_PARAMS, settings={"trigger": DEPLOYED})
    code, out, err = dbxdec(
        "backfill", "unwatched", "--start", "2024-01-01", "--end", "2024-01-02",
        "--force-trigger-pause", *FAST,
    )  # fmt: skip
    assert code == 2 and "applies only with --pause-schedule" in err, out + err
