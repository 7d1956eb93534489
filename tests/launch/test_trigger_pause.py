"""No trigger storms: a backfill pauses its dependants' data triggers and puts them back,
also after its launcher was killed; through the real WorkspaceClient and the emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from databricks_bundle_decorators.bundle.triggers import declared_trigger
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.guard.pause.schedule_pause import SchedulePause
from databricks_bundle_decorators.launch.guard.pause.trigger_pause import (
    DependantTrigger,
    dependant_triggers,
    hold_dependant_triggers,
)
from databricks_bundle_decorators.testing import JobsEmulator

from .trigger_chain import A_TABLE, B_TABLE, DEFINITIONS, GRAPH, TRIGGERS, marker_path

REPO = Path(__file__).resolve().parents[2]
CRON = {"quartz_cron_expression": "0 0 2 * * ?", "timezone_id": "UTC"}


def deploy(emu: JobsEmulator, **extra: dict[str, object]) -> dict[str, int]:
    """The chain's jobs in the workspace, each with its trigger (and ``extra`` settings)."""
    ids = {}
    for name in DEFINITIONS:
        settings: dict[str, object] = {}
        if name in TRIGGERS:
            settings["trigger"] = json.loads(json.dumps(TRIGGERS[name]))
        settings.update(extra.get(name, {}))
        ids[name] = emu.create_job(name, settings=settings)
    return ids


def status(emu: JobsEmulator, job_id: int, field: str = "trigger") -> str:
    return str(emu.job_settings(job_id)[field].get("pause_status", "UNPAUSED"))


def hold(
    emu: JobsEmulator, root: Path, ids: dict[str, int], lines: list[str]
) -> AbstractContextManager[list[DependantTrigger]]:
    return hold_dependant_triggers(
        emu.workspace_client(), GRAPH, [A_TABLE, B_TABLE], definitions=DEFINITIONS, root=root,
        job_id_of=ids.__getitem__, say=lines.append,
    )  # fmt: skip


def test_the_dependants_triggers_are_paused_during_the_backfill_and_restored_after(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    ids = deploy(emu)
    lines: list[str] = []

    with hold(emu, tmp_path, ids, lines) as held:
        assert [d.job for d in held] == ["job_b", "job_c"]
        assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "PAUSED"
        assert emu.job_settings(ids["job_b"])["trigger"]["table_update"] == {
            "table_names": [A_TABLE]
        }
        with pytest.raises(ValueError, match="paused: it does not fire"):
            emu.fire_table_update(ids["job_b"], {A_TABLE: 7})  # a commit of the backfill
        assert status(emu, ids["job_other"]) == status(emu, ids["job_files"]) == "UNPAUSED"

    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    assert not marker_path(tmp_path, "job_b", ids["job_b"]).exists()
    assert lines == [
        "paused the trigger of job 'job_b' for the backfill: it is restored when the backfill ends",
        "paused the trigger of job 'job_c' for the backfill: it is restored when the backfill ends",
        "restored the trigger of job 'job_b': trigger UNPAUSED",
        "restored the trigger of job 'job_c': trigger UNPAUSED",
    ]
    assert emu.runs(ids["job_b"]) == []  # no run started while paused


def test_only_the_trigger_is_paused_and_a_schedule_keeps_running(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    ids = deploy(emu, job_b={"schedule": dict(CRON)})

    with hold(emu, tmp_path, ids, []):
        assert status(emu, ids["job_b"]) == "PAUSED"
        assert status(emu, ids["job_b"], "schedule") == "UNPAUSED"

    assert status(emu, ids["job_b"]) == "UNPAUSED"


def test_the_pauses_are_restored_when_the_backfill_raises(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    ids = deploy(emu)

    with pytest.raises(KeyboardInterrupt), hold(emu, tmp_path, ids, []):
        raise KeyboardInterrupt

    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"


def test_a_failed_second_pause_puts_the_first_back(emu: JobsEmulator, tmp_path: Path) -> None:
    ids = deploy(emu)
    emu.inject_fault("/api/2.2/jobs/update", status=400, skip=1)  # job_c's pause is refused

    refused = pytest.raises(UsageError, match="--downstream: could not pause the trigger of job")
    with refused, hold(emu, tmp_path, ids, []):
        pytest.fail("the backfill must not start when a pause failed")

    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"


def test_a_trigger_paused_by_hand_stays_paused(emu: JobsEmulator, tmp_path: Path) -> None:
    ids = deploy(emu, job_c={"trigger": {**TRIGGERS["job_c"], "pause_status": "PAUSED"}})
    lines: list[str] = []

    with hold(emu, tmp_path, ids, lines):
        pass

    assert "the trigger of job 'job_c' is already paused: left as it is" in lines
    assert status(emu, ids["job_c"]) == "PAUSED" and status(emu, ids["job_b"]) == "UNPAUSED"


def test_a_pause_schedule_of_the_dependant_is_joined_and_the_last_holder_restores(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    ids = deploy(emu, job_b={"schedule": dict(CRON)})
    own = SchedulePause(
        emu.workspace_client(),
        root=tmp_path,
        job="job_b",
        job_id=ids["job_b"],
        declared_trigger=declared_trigger(DEFINITIONS["job_b"]),  # as the planner passes it
    )
    lines: list[str] = []

    with own.hold():  # a backfill of job_b with --pause-schedule
        with hold(emu, tmp_path, ids, lines):
            assert "paused for another backfill" in lines[0]
        assert status(emu, ids["job_b"]) == status(emu, ids["job_b"], "schedule") == "PAUSED"
        assert any("stays paused for the backfill still running" in line for line in lines)

    assert status(emu, ids["job_b"]) == status(emu, ids["job_b"], "schedule") == "UNPAUSED"


def test_a_killed_launcher_s_pauses_are_restored_by_the_next_command(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    ids = deploy(emu)
    listed = ",".join(f"{name}={job_id}" for name, job_id in ids.items())
    code = (
        "from tests.launch.trigger_chain import hold_in_child; "
        f"hold_in_child({emu.url!r}, {emu.token or 'dapi-test'!r}, {str(tmp_path)!r}, {listed!r})"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": f"{REPO}/src:{REPO}"},
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "held\n"  # the child holds the pauses
        assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "PAUSED"
    finally:
        child.kill()  # SIGKILL: no finally block of the child runs
        child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()

    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "PAUSED"  # left behind
    assert marker_path(tmp_path, "job_b", ids["job_b"]).exists()
    lines: list[str] = []

    with hold(emu, tmp_path, ids, lines):  # the next downstream backfill
        assert status(emu, ids["job_b"]) == "PAUSED"
    restored = [line for line in lines if "left paused by an interrupted backfill" in line]
    assert [line.split(",")[0] for line in restored] == [
        "restored the trigger of job 'job_b'",
        "restored the trigger of job 'job_c'",
    ]
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    assert not marker_path(tmp_path, "job_b", ids["job_b"]).exists()


def test_which_triggers_watch_what_a_backfill_writes() -> None:
    assert dependant_triggers(GRAPH, DEFINITIONS, ["MAIN.chain.A"]) == [
        DependantTrigger("job_b", (A_TABLE,))
    ]
    assert dependant_triggers(GRAPH, DEFINITIONS, [B_TABLE]) == [
        DependantTrigger("job_c", (B_TABLE,))
    ]
    landing = DependantTrigger("job_files", ("/Volumes/main/chain/landing/",))
    assert dependant_triggers(GRAPH, DEFINITIONS, [], ["/Volumes/main/chain"]) == [landing]
    assert dependant_triggers(GRAPH, DEFINITIONS, [], ["/Volumes/main/chain/landing/x/"]) == [
        landing
    ]
    assert dependant_triggers(GRAPH, DEFINITIONS, [], ["/Volumes/main/chain/land"]) == []
    assert dependant_triggers(GRAPH, DEFINITIONS, ["main.chain.c"]) == []
