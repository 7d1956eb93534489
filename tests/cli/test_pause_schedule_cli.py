"""``--pause-schedule`` and the slot kept free for a scheduled job, end to end against
the Jobs API emulator through ``dbxdec backfill``."""

from __future__ import annotations

from pathlib import Path

from databricks_bundle_decorators.launch.ledger.ledger import read_ledger
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import keys_of

from .clirun import FAST, NIGHTLY_PARAMS, Cli, assert_one_error_line

DAYS = [f"2024-01-{d:02d}" for d in range(1, 7)]
CRON = {"quartz_cron_expression": "0 0 2 * * ?", "timezone_id": "UTC"}
UPDATE = "/api/2.2/jobs/update"
RUN_NOW = "/api/2.2/jobs/run-now"


def pause_calls(emu: JobsEmulator) -> list[str]:
    """The schedule updates and run-nows in order, repeated run-nows as one: a slow
    run-now is sent again with its idempotency token (the launcher's overtaker), so
    under load there may be more requests than runs."""
    calls: list[str] = []
    for _, path in emu.request_log:
        if path in (UPDATE, RUN_NOW) and not (path == RUN_NOW and calls[-1:] == [RUN_NOW]):
            calls.append(path)
    return calls


def scheduled_job(emu: JobsEmulator, max_concurrent_runs: int = 10) -> int:
    return emu.create_job(
        "nightly",
        parameters=NIGHTLY_PARAMS,
        max_concurrent_runs=max_concurrent_runs,
        settings={"schedule": dict(CRON)},
    )


def test_the_schedule_is_paused_for_the_backfill_and_restored(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    job_id = scheduled_job(emu)

    code, out, err = dbxdec(
        "backfill", "nightly", "--start", DAYS[0], "--end", DAYS[-1], "--pause-schedule", *FAST
    )

    assert code == 0, out + err
    assert sorted(keys_of(emu, job_id)) == DAYS
    # paused before the first run, put back after the last one (one run a day, above)
    assert pause_calls(emu) == [UPDATE, RUN_NOW, UPDATE]
    assert emu.job_settings(job_id)["schedule"]["pause_status"] == "UNPAUSED"
    assert not list((project / ".dbxdec" / "paused").glob("*.json"))
    ledger = read_ledger(next((project / ".dbxdec" / "backfills").glob("*.sqlite")))
    assert ledger.options.pause_schedule is True  # --resume pauses it again


def test_without_pausing_one_slot_stays_free_for_the_schedule(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    job_id = scheduled_job(emu, max_concurrent_runs=3)

    code, out, _ = dbxdec(
        "backfill", "nightly", "--start", DAYS[0], "--end", DAYS[-1], "--max-concurrent", "3",
        *FAST,
    )  # fmt: skip

    assert code == 0
    assert sorted(keys_of(emu, job_id)) == DAYS
    assert "so a scheduled run always has a slot" in out
    assert "up to 2 at once" in out
    runs = emu.runs(job_id)
    ends = [r.ended for r in runs]
    assert None not in ends
    peak = max(sum(1 for o in runs if o.created <= r.created < (o.ended or 0)) for r in runs)
    assert peak <= 2
    assert emu.job_settings(job_id)["schedule"]["pause_status"] == "UNPAUSED"


def test_a_limit_of_one_warns_that_scheduled_runs_queue_behind(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    scheduled_job(emu, max_concurrent_runs=1)
    code, out, _ = dbxdec("backfill", "nightly", "--keys", DAYS[0], *FAST)
    assert code == 0
    assert "scheduled runs will queue behind the backfill's runs" in out


def test_pause_schedule_is_refused_locally(dbxdec: Cli) -> None:
    code, _, err = dbxdec("backfill", "nightly", "--keys", DAYS[0], "--local", "--pause-schedule")
    assert code == 2
    assert "--pause-schedule pauses a Databricks job's schedule" in assert_one_error_line(err)


def test_pause_schedule_without_can_manage_is_refused_before_anything_starts(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    """Pausing a schedule is a ``jobs/update``: CAN MANAGE (or IS OWNER), not CAN MANAGE
    RUN. The caller's level is read first: one line, exit 4, nothing paused or run."""
    alice = "alice@example.com"
    job_id = scheduled_job(emu)
    emu.set_job_permissions(job_id, [("user", alice, "CAN_MANAGE_RUN")])
    emu.answer_me_as(alice)

    code, out, err = dbxdec("backfill", "nightly", "--keys", DAYS[0], "--pause-schedule", *FAST)

    assert code == 4, out + err
    assert assert_one_error_line(err) == (
        f"Error: --pause-schedule: the caller {alice} has CAN_MANAGE_RUN on job 'nightly' (job "
        f"id {job_id}); pausing its schedule (jobs/update) needs CAN_MANAGE (or IS_OWNER), so "
        f"nothing was paused or started; ask an owner of job 'nightly' to grant {alice} "
        "CAN_MANAGE on it (directly or to a group it is directly in), or run without "
        "--pause-schedule"
    )
    assert [path for _, path in emu.request_log if path in (UPDATE, RUN_NOW)] == []
    assert not list((project / ".dbxdec" / "paused").rglob("*.json"))

    emu.set_job_permissions(job_id, [("user", alice, "CAN_MANAGE")])
    code, out, err = dbxdec("backfill", "nightly", "--keys", DAYS[0], "--pause-schedule", *FAST)
    assert code == 0, out + err
    assert pause_calls(emu) == [UPDATE, RUN_NOW, UPDATE] and len(emu.runs(job_id)) == 1


def test_a_resume_that_pauses_again_checks_the_caller_first(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    """``--resume`` of a ``--pause-schedule`` backfill pauses the schedule again: a caller
    without CAN MANAGE is refused before anything is paused or run."""
    alice = "alice@example.com"
    job_id = scheduled_job(emu)
    emu.set_outcome(DAYS[1], job_id=job_id, fail_attempts=99)
    code, out, err = dbxdec(
        "backfill", "nightly", "--keys", f"{DAYS[0]},{DAYS[1]}", "--pause-schedule", *FAST
    )
    assert code == 1, out + err
    ledger = read_ledger(next((project / ".dbxdec" / "backfills").glob("*.sqlite")))
    emu.set_job_permissions(job_id, [("user", alice, "CAN_MANAGE_RUN")])
    emu.answer_me_as(alice)
    emu.request_log.clear()

    code, out, err = dbxdec("backfill", "--resume", ledger.id, *FAST[:2])

    assert code == 4, out + err
    line = assert_one_error_line(err)
    assert line.startswith(f"Error: --pause-schedule: the caller {alice} has CAN_MANAGE_RUN")
    assert [path for _, path in emu.request_log if path in (UPDATE, RUN_NOW)] == []
    assert emu.job_settings(job_id)["schedule"]["pause_status"] == "UNPAUSED"
