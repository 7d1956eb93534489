"""--pause-schedule: pausing a job's schedule for a backfill and putting it back,
through the real WorkspaceClient and the emulator; and the keep-a-slot-free rule."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from databricks_bundle_decorators.errors import UsageError, WorkspaceRejected
from databricks_bundle_decorators.launch.backends.databricks_backend import RemoteJob, find_job
from databricks_bundle_decorators.launch.guard.pause.schedule_pause import (
    SchedulePause,
    restore_stale_pauses,
    slot_policy,
)
from databricks_bundle_decorators.launch.ledger.claims import when
from databricks_bundle_decorators.testing import JobsEmulator

from .trigger_chain import marker_path, written_trigger

CRON = {"quartz_cron_expression": "0 0 2 * * ?", "timezone_id": "Europe/Paris"}
UPDATE = "/api/2.2/jobs/update"
GET = "/api/2.2/jobs/get"
DEAD_PID = 2**22 + 12345  # above the default pid_max: no such process


def scheduled_job(emu: JobsEmulator, **settings: object) -> int:
    return emu.create_job(
        "nightly", max_concurrent_runs=4, settings={"schedule": dict(CRON), **settings}
    )


def pause_status(emu: JobsEmulator, job_id: int, field: str = "schedule") -> str:
    return str(emu.job_settings(job_id)[field]["pause_status"])


def pause(emu: JobsEmulator, root: Path, job_id: int) -> SchedulePause:
    return SchedulePause(emu.workspace_client(), root=root, job="nightly", job_id=job_id)


def test_the_schedule_is_paused_during_the_block_and_restored_after(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    job_id = scheduled_job(emu)
    holder = pause(emu, tmp_path, job_id)

    with holder.hold() as message:
        assert pause_status(emu, job_id) == "PAUSED"
        assert emu.job_settings(job_id)["schedule"] == {**CRON, "pause_status": "PAUSED"}
        marker = json.loads(marker_path(tmp_path, "nightly", job_id).read_text())
        assert marker["original"] == {"schedule": "UNPAUSED"}
        assert marker["pid"] == os.getpid()

    assert "paused the schedule of job 'nightly'" in message
    assert emu.job_settings(job_id)["schedule"] == {**CRON, "pause_status": "UNPAUSED"}
    assert not marker_path(tmp_path, "nightly", job_id).exists()
    assert holder.restore_message == "restored the schedule of job 'nightly': schedule UNPAUSED"


def test_the_schedule_is_restored_when_the_backfill_raises(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    job_id = scheduled_job(emu)

    with pytest.raises(RuntimeError, match="boom"), pause(emu, tmp_path, job_id).hold():
        raise RuntimeError("boom")

    assert pause_status(emu, job_id) == "UNPAUSED"
    assert not marker_path(tmp_path, "nightly", job_id).exists()


def test_the_schedule_is_restored_on_ctrl_c(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = scheduled_job(emu)

    with pytest.raises(KeyboardInterrupt), pause(emu, tmp_path, job_id).hold():
        raise KeyboardInterrupt

    assert pause_status(emu, job_id) == "UNPAUSED"
    assert not marker_path(tmp_path, "nightly", job_id).exists()


def test_trigger_and_continuous_are_paused_and_restored_exactly(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    job_id = emu.create_job(
        "nightly",
        settings={
            "trigger": {"pause_status": "UNPAUSED", "periodic": {"interval": 1, "unit": "HOURS"}},
            "continuous": {"pause_status": "PAUSED"},
        },
    )

    with pause(emu, tmp_path, job_id).hold():
        assert pause_status(emu, job_id, "trigger") == "PAUSED"
        assert emu.job_settings(job_id)["trigger"]["periodic"] == {"interval": 1, "unit": "HOURS"}

    assert pause_status(emu, job_id, "trigger") == "UNPAUSED"
    assert pause_status(emu, job_id, "continuous") == "PAUSED"  # paused before: left paused


def test_a_job_without_a_schedule_is_left_alone(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = emu.create_job("nightly")

    with pause(emu, tmp_path, job_id).hold() as message:
        assert not marker_path(tmp_path, "nightly", job_id).exists()

    assert message == "job 'nightly' has no schedule or trigger: nothing to pause"
    assert emu.requests[UPDATE] == 0


def test_a_schedule_paused_by_hand_stays_paused(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = scheduled_job(emu, schedule={**CRON, "pause_status": "PAUSED"})

    with pause(emu, tmp_path, job_id).hold() as message:
        pass

    assert "already paused" in message
    assert pause_status(emu, job_id) == "PAUSED" and emu.requests[UPDATE] == 0


def test_the_marker_is_written_before_the_pause_request(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = scheduled_job(emu)
    emu.inject_fault(UPDATE, status=500)  # the pause request fails...
    emu.inject_fault(GET, status=500, skip=1)  # ...and so does reading it back to undo it

    refused = pytest.raises(UsageError, match="could not pause the schedule of job 'nightly'")
    with refused, pause(emu, tmp_path, job_id).hold():
        pytest.fail("the block must not run when the pause failed")

    marker = json.loads(marker_path(tmp_path, "nightly", job_id).read_text())
    assert marker["original"] == {"schedule": "UNPAUSED"} and marker["job_id"] == job_id
    assert emu.faults[f"500 {UPDATE}"] == 1 and emu.faults[f"500 {GET}"] == 1
    assert restore_stale_pauses(emu.workspace_client(), tmp_path, "nightly") == [
        restored_line(tmp_path, job_id, marker["paused_at"])
    ]
    assert pause_status(emu, job_id) == "UNPAUSED"
    assert not marker_path(tmp_path, "nightly", job_id).exists()


def test_a_failed_pause_that_was_applied_is_put_back_at_once(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    job_id = scheduled_job(emu)
    emu.inject_fault(UPDATE, status=500, count=1)

    with pytest.raises(UsageError), pause(emu, tmp_path, job_id).hold():
        pass

    assert pause_status(emu, job_id) == "UNPAUSED"
    assert not marker_path(tmp_path, "nightly", job_id).exists()


def test_a_refused_permission_names_what_is_needed(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = scheduled_job(emu)
    emu.inject_fault(UPDATE, status=403, count=2)

    with pytest.raises(WorkspaceRejected, match="CAN MANAGE"), pause(emu, tmp_path, job_id).hold():
        pass


def test_a_failed_restore_keeps_the_marker_and_says_so(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = scheduled_job(emu)
    holder = pause(emu, tmp_path, job_id)

    with holder.hold():
        emu.inject_fault(UPDATE, status=500)

    assert pause_status(emu, job_id) == "PAUSED"
    assert holder.restore_message is not None
    assert holder.restore_message.startswith("could not restore the schedule of job 'nightly'")
    assert "next dbxdec command" in holder.restore_message
    expected = restored_line(tmp_path, job_id)
    assert restore_stale_pauses(emu.workspace_client(), tmp_path, "nightly") == [expected]
    assert pause_status(emu, job_id) == "UNPAUSED"


def restored_line(root: Path, job_id: int, paused_at: float | None = None) -> str:
    if paused_at is None:
        paused_at = json.loads(marker_path(root, "nightly", job_id).read_text())["paused_at"]
    return (
        "restored the schedule of job 'nightly', left paused by an interrupted backfill "
        f"({when(paused_at)}): schedule UNPAUSED"
    )


def leave_marker(emu: JobsEmulator, root: Path, job_id: int, pid: int) -> None:
    """A marker as a launcher killed in mid-backfill (process ``pid``) leaves it."""
    emu.workspace_client().api_client.do(
        "POST",
        UPDATE,
        body={"job_id": job_id, "new_settings": {"schedule": {**CRON, "pause_status": "PAUSED"}}},
    )
    path = marker_path(root, "nightly", job_id)
    path.parent.mkdir(parents=True)
    holder = {"hostname": socket.gethostname(), "pid": pid, "hold_id": "dead"}
    marker = {
        "format": 1,
        "job": "nightly",
        "job_id": job_id,
        "host": emu.url,
        "original": {"schedule": "UNPAUSED"},
        **holder,
        "paused_at": 1_700_000_000.0,
    }
    path.write_text(json.dumps(marker))


def test_a_crashed_backfill_s_pause_is_restored_by_the_next_command(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    job_id = scheduled_job(emu)
    leave_marker(emu, tmp_path, job_id, DEAD_PID)

    messages = restore_stale_pauses(emu.workspace_client(), tmp_path, "nightly")

    assert messages == [
        "restored the schedule of job 'nightly', left paused by an interrupted backfill "
        "(2023-11-14 22:13:20 UTC): schedule UNPAUSED"
    ]
    assert emu.job_settings(job_id)["schedule"] == {**CRON, "pause_status": "UNPAUSED"}
    assert not marker_path(tmp_path, "nightly", job_id).exists()
    assert restore_stale_pauses(emu.workspace_client(), tmp_path, "nightly") == []


def test_a_pause_held_by_a_running_backfill_is_left_alone(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    job_id = scheduled_job(emu)
    with pause(emu, tmp_path, job_id).hold():
        assert restore_stale_pauses(emu.workspace_client(), tmp_path, None) == []
        assert pause_status(emu, job_id) == "PAUSED"


def test_other_jobs_markers_wait_for_their_own_command(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = scheduled_job(emu)
    leave_marker(emu, tmp_path, job_id, DEAD_PID)

    assert restore_stale_pauses(emu.workspace_client(), tmp_path, "other") == []
    assert pause_status(emu, job_id) == "PAUSED"


def test_a_new_backfill_adopts_a_crashed_backfill_s_pause(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    job_id = scheduled_job(emu)
    leave_marker(emu, tmp_path, job_id, DEAD_PID)

    with pause(emu, tmp_path, job_id).hold() as message:
        assert pause_status(emu, job_id) == "PAUSED"

    assert "left paused by an interrupted backfill" in message
    assert pause_status(emu, job_id) == "UNPAUSED"  # the original, not the PAUSED it found


def test_two_backfills_share_the_pause_until_the_last_ends(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    job_id = scheduled_job(emu)
    first, second = pause(emu, tmp_path, job_id), pause(emu, tmp_path, job_id)

    with first.hold():
        with second.hold() as joined:
            assert "paused for another backfill" in joined
        assert pause_status(emu, job_id) == "PAUSED"
        assert second.restore_message is not None and "stays paused" in second.restore_message

    assert pause_status(emu, job_id) == "UNPAUSED"


def test_a_damaged_marker_is_reported_not_guessed(emu: JobsEmulator, tmp_path: Path) -> None:
    path = marker_path(tmp_path, "nightly", 1)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")

    (message,) = restore_stale_pauses(emu.workspace_client(), tmp_path, None)

    assert "is damaged" in message and path.exists()


def test_a_marker_of_a_deleted_job_is_dropped(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = scheduled_job(emu)
    leave_marker(emu, tmp_path, job_id, DEAD_PID)
    marker = marker_path(tmp_path, "nightly", job_id)
    text = marker.read_text().replace(f'"job_id": {job_id}', '"job_id": 4242')
    marker.unlink()
    marker_path(tmp_path, "nightly", 4242).parent.mkdir(parents=True)
    marker_path(tmp_path, "nightly", 4242).write_text(text)

    (message,) = restore_stale_pauses(emu.workspace_client(), tmp_path, "nightly")

    assert "job 4242 no longer exists" in message
    assert not marker_path(tmp_path, "nightly", 4242).exists()


def test_find_job_reports_the_schedule_state(emu: JobsEmulator) -> None:
    client = emu.workspace_client()
    plain = emu.create_job("plain")
    running = emu.create_job("running", settings={"schedule": dict(CRON)})
    paused = emu.create_job("paused", settings={"schedule": {**CRON, "pause_status": "PAUSED"}})

    assert find_job(client, "plain", job_id=plain).schedule_paused is None
    assert find_job(client, "running", job_id=running).schedule_paused is False
    assert find_job(client, "paused", job_id=paused).schedule_paused is True


def remote(limit: int, schedule_paused: bool | None, *, queue: bool = True) -> RemoteJob:
    return RemoteJob(1001, "nightly", limit, queue, schedule_paused=schedule_paused)


@pytest.mark.parametrize(
    ("job", "cap", "paused", "expected_cap"),
    [
        pytest.param(remote(4, False), 10, False, 3, id="scheduled-limit-4-keeps-one-free"),
        pytest.param(remote(4, False), 2, False, 2, id="cap-already-below-the-limit"),
        pytest.param(remote(4, False), 10, True, 10, id="pause-schedule-given"),
        pytest.param(remote(4, True), 10, False, 10, id="schedule-paused-already"),
        pytest.param(remote(4, None), 10, False, 10, id="no-schedule"),
        pytest.param(remote(1, None), 10, False, 10, id="no-schedule-limit-1"),
    ],
)
def test_slot_policy_cap(job: RemoteJob, cap: int, paused: bool, expected_cap: int) -> None:
    assert slot_policy(job, cap, paused=paused)[0] == expected_cap


def test_slot_policy_says_why_it_lowers_the_cap() -> None:
    _, (warning,) = slot_policy(remote(4, False), 10, paused=False)
    assert "uses at most 3 so a scheduled run always has a slot" in warning
    assert slot_policy(remote(4, False), 3, paused=False) == (3, [])


def test_slot_policy_warns_that_scheduled_runs_queue_behind_a_limit_of_one() -> None:
    cap, (warning,) = slot_policy(remote(1, False), 5, paused=False)

    assert cap == 5
    assert "scheduled runs will queue behind the backfill's runs" in warning
    assert "--pause-schedule" in warning
    _, (skipped,) = slot_policy(remote(1, False, queue=False), 5, paused=False)
    assert "be skipped while the backfill's runs" in skipped
    assert slot_policy(remote(1, False), 5, paused=True) == (5, [])


CONDITIONED = {
    "pause_status": "UNPAUSED",
    "table_update": {
        "table_names": ["main.s.a", "main.s.b"],
        "condition": "ALL_UPDATED",
        "min_time_between_triggers_seconds": 60,
        "wait_after_last_change_seconds": 120,
    },
}
"""A trigger with every setting a pause must keep (the contract seam: a pause once dropped
the ``condition``)."""


@pytest.mark.parametrize("fields", [("trigger",), ("schedule", "trigger")], ids=["alone", "all"])
def test_a_pause_keeps_the_trigger_s_condition_and_other_settings(
    emu: JobsEmulator, tmp_path: Path, fields: tuple[str, ...]
) -> None:
    job_id = emu.create_job("nightly", settings={"trigger": json.loads(json.dumps(CONDITIONED))})
    client = emu.workspace_client()
    held = SchedulePause(
        client,
        root=tmp_path,
        job="nightly",
        job_id=job_id,
        fields=fields,
        declared_trigger=CONDITIONED,
    )

    with held.hold():
        assert written_trigger(emu, job_id) == {**CONDITIONED, "pause_status": "PAUSED"}
        emu.inject_fault(UPDATE, status=500)  # the restore fails: the next command's does it
    assert emu.job_settings(job_id)["trigger"]["pause_status"] == "PAUSED"

    assert len(restore_stale_pauses(client, tmp_path, "nightly")) == 1
    assert written_trigger(emu, job_id) == CONDITIONED
    with held.hold():
        pass
    assert written_trigger(emu, job_id) == CONDITIONED
