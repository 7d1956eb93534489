"""jobs/update and jobs/reset of the emulator, through the real WorkspaceClient."""

from __future__ import annotations

import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import InvalidParameterValue, ResourceDoesNotExist
from databricks.sdk.service.jobs import (
    CronSchedule,
    JobSettings,
    PauseStatus,
    Task,
    TriggerSettings,
)

from databricks_bundle_decorators.testing import JobsEmulator

CRON = {"quartz_cron_expression": "0 0 2 * * ?", "timezone_id": "Europe/Paris"}


def task(key: str, description: str = "") -> dict[str, object]:
    return {"task_key": key, "description": description}


def test_a_schedule_without_pause_status_is_stored_unpaused(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly", settings={"schedule": dict(CRON)})

    schedule = w.jobs.get(job_id).settings.schedule  # type: ignore[union-attr]

    assert schedule is not None and schedule.pause_status == PauseStatus.UNPAUSED
    assert schedule.quartz_cron_expression == CRON["quartz_cron_expression"]
    listed = next(iter(w.jobs.list(name="nightly")))
    assert listed.settings.schedule.timezone_id == "Europe/Paris"  # type: ignore[union-attr]


def test_update_replaces_the_named_fields_and_keeps_the_others(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly", max_concurrent_runs=2, settings={"schedule": dict(CRON)})

    w.jobs.update(
        job_id,
        new_settings=JobSettings(
            schedule=CronSchedule(
                quartz_cron_expression=CRON["quartz_cron_expression"],
                timezone_id=CRON["timezone_id"],
                pause_status=PauseStatus.PAUSED,
            )
        ),
    )

    settings = emu.job_settings(job_id)
    assert settings["schedule"] == {**CRON, "pause_status": "PAUSED"}
    assert settings["max_concurrent_runs"] == 2 and settings["name"] == "nightly"


def test_update_refuses_a_schedule_without_its_cron_expression(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly", settings={"schedule": dict(CRON)})
    body = {"job_id": job_id, "new_settings": {"schedule": {"pause_status": "PAUSED"}}}

    with pytest.raises(InvalidParameterValue, match=r"schedule\.quartz_cron_expression"):
        w.api_client.do("POST", "/api/2.2/jobs/update", body=body)

    assert emu.job_settings(job_id)["schedule"]["pause_status"] == "UNPAUSED"  # unchanged


def test_update_refuses_an_unknown_pause_status(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("nightly")
    body = {"job_id": job_id, "new_settings": {"trigger": {"pause_status": "SLEEPING"}}}

    with pytest.raises(InvalidParameterValue, match=r"trigger\.pause_status"):
        w.api_client.do("POST", "/api/2.2/jobs/update", body=body)


def test_update_merges_tasks_by_task_key(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("nightly", settings={"tasks": [task("a", "old"), task("b")]})

    w.jobs.update(
        job_id,
        new_settings=JobSettings(
            tasks=[Task(task_key="a", description="new"), Task(task_key="c", description="")]
        ),
    )

    tasks = emu.job_settings(job_id)["tasks"]
    assert [(t["task_key"], t.get("description")) for t in tasks] == [
        ("a", "new"),
        ("b", ""),
        ("c", ""),
    ]


def test_fields_to_remove_drops_top_level_fields_and_keyed_entries(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job(
        "nightly", settings={"schedule": dict(CRON), "tasks": [task("a"), task("b")]}
    )

    w.jobs.update(job_id, fields_to_remove=["schedule", "tasks/a"])

    settings = emu.job_settings(job_id)
    assert "schedule" not in settings
    assert [t["task_key"] for t in settings["tasks"]] == ["b"]
    with pytest.raises(InvalidParameterValue, match="no such task_key"):
        w.jobs.update(job_id, fields_to_remove=["tasks/zzz"])
    with pytest.raises(InvalidParameterValue, match="fields_to_remove"):
        w.jobs.update(job_id, fields_to_remove=["schedule/pause_status"])


def test_reset_replaces_every_setting(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job(
        "nightly", max_concurrent_runs=3, tags={"team": "data"}, settings={"schedule": dict(CRON)}
    )

    w.jobs.reset(
        job_id,
        new_settings=JobSettings(
            name="renamed", trigger=TriggerSettings(pause_status=PauseStatus.PAUSED)
        ),
    )

    settings = emu.job_settings(job_id)
    assert settings["name"] == "renamed" and settings["max_concurrent_runs"] == 1
    assert "schedule" not in settings and "tags" not in settings
    assert settings["trigger"] == {"pause_status": "PAUSED"}
    with pytest.raises(InvalidParameterValue, match="new_settings"):
        w.api_client.do("POST", "/api/2.2/jobs/reset", body={"job_id": job_id})


def test_update_and_reset_of_an_unknown_job_fail(w: WorkspaceClient) -> None:
    with pytest.raises(InvalidParameterValue, match="Job 4242 does not exist"):
        w.jobs.update(4242, new_settings=JobSettings(max_concurrent_runs=2))
    with pytest.raises(InvalidParameterValue, match="Job 4242 does not exist"):
        w.jobs.reset(4242, new_settings=JobSettings(name="x"))
    with pytest.raises(ResourceDoesNotExist):
        w.jobs.get(4242)


def test_a_higher_concurrency_limit_starts_queued_runs(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly", parameters={"backfill_key": ""}, max_concurrent_runs=1)
    for key in ("k1", "k2"):
        emu.set_outcome(key, hold=True)
        w.jobs.run_now(job_id, job_parameters={"backfill_key": key})
    assert [r.life_cycle_state for r in emu.runs(job_id)] == ["RUNNING", "QUEUED"]

    w.jobs.update(job_id, new_settings=JobSettings(max_concurrent_runs=2))

    assert [r.life_cycle_state for r in emu.runs(job_id)] == ["RUNNING", "RUNNING"]
    emu.release()


def test_job_settings_of_an_unknown_job_raise_key_error(emu: JobsEmulator) -> None:
    with pytest.raises(KeyError, match="does not exist"):
        emu.job_settings(4242)


def test_a_scripted_fault_can_let_the_first_requests_through(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly")
    emu.inject_fault("/api/2.2/jobs/get", status=400, skip=1)

    assert w.jobs.get(job_id).job_id == job_id  # let through
    with pytest.raises(InvalidParameterValue, match="emulated fault"):
        w.jobs.get(job_id)
    assert w.jobs.get(job_id).job_id == job_id  # one fault only
    assert emu.faults["400 /api/2.2/jobs/get"] == 1
