"""``dbxdec backfill A --downstream`` on the emulator killed mid-backfill (SIGKILL of the
CLI in a subprocess while a run is held): the dependant's trigger stays paused, and the
next command of B (here its own backfill of another day) puts it back first. The
resume of the killed backfill is in tests/launch/test_downstream_databricks.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import write_project
from tests.launch.test_durability import launcher_env, start_launcher

PIPELINES = """\
from databricks_bundle_decorators import DailyBackfill, TableUpdate, job, source, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager

A = source("main.sub.a", event_time="ts")


@job(name="sub_a", backfill=DailyBackfill("2024-01-01"))
def sub_a():
    @task(io_manager=SparkTableIoManager("main.sub.a", partition_column="day"))
    def write():
        ...

    write()


@job(name="sub_b", backfill=DailyBackfill("2024-01-01", lookback=1), sources=[A],
     triggered_by=TableUpdate([A]))
def sub_b():
    @task(io_manager=SparkTableIoManager("main.sub.b", partition_column="day"))
    def write():
        ...

    write()
"""


def trigger_status(emu: JobsEmulator, job_id: int) -> str:
    return str(emu.job_settings(job_id)["trigger"].get("pause_status", "UNPAUSED"))


def test_the_next_command_restores_a_killed_launchers_paused_trigger(
    workspace_env: JobsEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = workspace_env
    project = write_project(tmp_path / "project", "downstream_killed_pipelines")
    (project / "downstream_killed_pipelines.py").write_text(PIPELINES)
    a = emu.create_job("sub_a")
    b = emu.create_job(
        "sub_b", settings={"trigger": {"table_update": {"table_names": ["main.sub.a"]}}}
    )
    emu.hold_runs = True
    log = tmp_path / "launcher.log"
    proc = start_launcher(
        project, launcher_env(emu, tmp_path),
        "sub_a", "--start", "2024-01-30", "--end", "2024-01-31", "--downstream", log=log,
    )  # fmt: skip
    try:
        emu.wait_for(lambda runs: len(runs) >= 1, job_id=a, what="a held run of sub_a")
        assert trigger_status(emu, b) == "PAUSED", log.read_text()
    finally:
        proc.kill()  # SIGKILL: none of the launcher's cleanup runs
        proc.wait()
    assert trigger_status(emu, b) == "PAUSED"  # left behind by the killed launcher
    emu.hold_runs = False
    emu.release()
    assert len(list_ledgers(project)) == 1

    # the next command of B (its own backfill of another day) connects to B first
    with pytest.raises(SystemExit) as exit_info:
        main(["backfill", "sub_b", "--keys", "2024-02-05", "--project", str(project), "--json",
              "--poll-interval", "0.01"])  # fmt: skip
    out, err = capsys.readouterr()

    assert exit_info.value.code == 0, out + err
    said = [
        json.loads(line).get("message", "") for line in out.splitlines() if line.startswith("{")
    ]
    assert any("restored the trigger of job 'sub_b', left paused" in m for m in said), out
    assert trigger_status(emu, b) == "UNPAUSED"
