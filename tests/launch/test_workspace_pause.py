"""A detached ``--downstream`` backfill's hold on its dependants' triggers, kept in the
workspace, through the real WorkspaceClient and the Jobs API emulator: paused and
restored, joined by a second backfill, left alone when paused by hand, restored by the
next command once the backfill's controller runs ended (and only then), idempotent for
a resume, and put back when a pause is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from databricks_bundle_decorators.bundle.triggers import declared_trigger
from databricks_bundle_decorators.errors import UsageError, WorkspaceRejected
from databricks_bundle_decorators.launch.guard.connection import connect_job
from databricks_bundle_decorators.launch.guard.pause.trigger_pause import (
    hold_triggers_detached,
    release_triggers_detached,
    restore_stale_workspace_pauses,
)
from databricks_bundle_decorators.launch.ledger.marker import PAUSED_DIR, paused_folder
from databricks_bundle_decorators.launch.plan.request import Connection
from databricks_bundle_decorators.testing import JobsEmulator

from .trigger_chain import DEFINITIONS, TRIGGERS, written_trigger

TOKEN = "dapi-wsp-secret-5e1d07"
CONTROLLER_PARAMS = {"backfill_id": "", "job_id": "", "generation": ""}


@pytest.fixture
def emu(monkeypatch: pytest.MonkeyPatch) -> Iterator[JobsEmulator]:
    """An emulator that wants a token, whose runs stay RUNNING until cancelled (the
    controller runs: their end is the test's to choose)."""
    monkeypatch.delenv("DBXDEC_PAUSED_DIR", raising=False)
    with JobsEmulator(token=TOKEN) as emulator:
        emulator.hold_runs = True
        yield emulator


def paused_file(job_id: int, backfill_id: str) -> str:
    return f"{paused_folder(job_id)}/{backfill_id}.json"


class Place:
    """The dependants B and C (table-update triggers) and the controller job."""

    def __init__(self, emu: JobsEmulator) -> None:
        self.emu = emu
        self.client = emu.workspace_client()
        self.b = emu.create_job("job_b", settings={"trigger": dict(TRIGGERS["job_b"])})
        self.c = emu.create_job("job_c", settings={"trigger": dict(TRIGGERS["job_c"])})
        self.controller = emu.create_job(
            "dbxdec_controller", parameters=CONTROLLER_PARAMS, max_concurrent_runs=100
        )

    def start(self, backfill_id: str) -> int:
        """A controller run for ``backfill_id``, active until :meth:`end`."""
        params = {"backfill_id": backfill_id, "job_id": "1", "generation": "1"}
        return self.client.jobs.run_now(self.controller, job_parameters=params).run_id

    def end(self, run_id: int) -> None:
        self.client.jobs.cancel_run(run_id)
        self.emu.wait_for(
            lambda runs: not any(r.run_id == run_id and r.active for r in runs),
            what=f"controller run {run_id} ended",
        )

    def hold(
        self,
        backfill_id: str,
        jobs: dict[str, int] | None = None,
        declared: dict[str, dict[str, object]] | None = None,
    ) -> list[str]:
        jobs = jobs or {"job_b": self.b}
        return hold_triggers_detached(
            self.client,
            backfill_id=backfill_id,
            controller_job_id=self.controller,
            jobs=jobs,
            declared=_declared(jobs) if declared is None else declared,
        )

    def release(self, backfill_id: str, jobs: dict[str, int] | None = None) -> list[str]:
        return release_triggers_detached(
            self.client, backfill_id=backfill_id, jobs=jobs or {"job_b": self.b}
        )

    def status(self, job_id: int) -> str:
        return str(self.emu.job_settings(job_id)["trigger"].get("pause_status", "UNPAUSED"))

    def markers(self) -> dict[str, dict[str, object]]:
        files = self.emu.workspace_files(PAUSED_DIR)
        return {path: json.loads(content) for path, content in files.items()}


@pytest.fixture
def place(emu: JobsEmulator) -> Place:
    return Place(emu)


def test_a_hold_pauses_the_trigger_behind_a_tokenless_marker_and_its_release_restores_it(
    place: Place,
) -> None:
    place.start("bf-1")
    lines = place.hold("bf-1")
    assert lines == [
        "paused the trigger of job 'job_b' for backfill bf-1: it is restored when the backfill ends"
    ]
    assert place.status(place.b) == "PAUSED"
    path = paused_file(place.b, "bf-1")
    assert path == f"/Shared/dbxdec/paused/job-{place.b}/bf-1.json"
    marker = place.markers()[path]
    assert {k: v for k, v in marker.items() if k != "paused_at"} == {
        "format": 1,
        "job": "job_b",
        "job_id": place.b,
        "backfill_id": "bf-1",
        "controller_job_id": place.controller,
        "original": "UNPAUSED",
        "trigger": {"table_update": {"table_names": ["main.chain.a"]}},  # as declared
    }
    assert all(TOKEN not in c.decode() for c in place.emu.workspace_files("/").values())

    assert place.release("bf-1") == ["restored the trigger of job 'job_b': trigger UNPAUSED"]
    assert place.status(place.b) == "UNPAUSED"
    assert place.markers() == {}


def test_a_second_backfill_joins_and_the_trigger_is_restored_when_the_last_ends(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBXDEC_PAUSED_DIR", "/Users/ops/paused/")
    place.start("bf-1")
    place.start("bf-2")
    place.hold("bf-1")
    assert place.hold("bf-2") == [
        "the trigger of job 'job_b' is paused for backfill bf-1: it stays paused until both end"
    ]
    markers = place.emu.workspace_files("/Users/ops/paused")
    assert sorted(markers) == [f"/Users/ops/paused/job-{place.b}/bf-{n}.json" for n in (1, 2)]
    second = json.loads(markers[f"/Users/ops/paused/job-{place.b}/bf-2.json"])
    assert second["original"] == "UNPAUSED"  # the first's original, not the PAUSED it found

    assert place.release("bf-1") == ["the trigger of job 'job_b' stays paused for backfill bf-2"]
    assert place.status(place.b) == "PAUSED"
    assert place.release("bf-2") == ["restored the trigger of job 'job_b': trigger UNPAUSED"]
    assert place.status(place.b) == "UNPAUSED"
    assert place.emu.workspace_files("/Users/ops/paused") == {}


def test_a_trigger_paused_by_hand_is_left_as_it_is(place: Place) -> None:
    from databricks.sdk.service.jobs import JobSettings, PauseStatus, TriggerSettings

    trigger = TriggerSettings.from_dict(TRIGGERS["job_b"])
    trigger.pause_status = PauseStatus.PAUSED
    place.client.jobs.update(place.b, new_settings=JobSettings(trigger=trigger))
    place.start("bf-1")
    assert place.hold("bf-1") == ["the trigger of job 'job_b' is already paused: left as it is"]
    assert place.markers() == {}
    assert place.release("bf-1") == ["the trigger of job 'job_b' was not paused for backfill bf-1"]
    assert place.status(place.b) == "PAUSED"


def test_a_pause_whose_backfill_ended_is_restored_by_the_next_command(
    place: Place, tmp_path: Path
) -> None:
    run = place.start("bf-1")
    place.hold("bf-1")
    place.end(run)
    [line] = restore_stale_workspace_pauses(place.client, "job_b", place.b)
    assert line.startswith("restored the trigger of job 'job_b', left paused by detached ")
    assert line.endswith("which no longer runs: trigger UNPAUSED")
    assert place.status(place.b) == "UNPAUSED" and place.markers() == {}

    # a controller job that never existed holds nothing either
    hold_triggers_detached(
        place.client,
        backfill_id="bf-2",
        controller_job_id=987654,
        jobs={"job_b": place.b},
        declared=_declared({"job_b": place.b}),
    )
    assert place.status(place.b) == "PAUSED"
    [line] = restore_stale_workspace_pauses(place.client, "job_b", place.b)
    assert "by detached backfill bf-2" in line and place.status(place.b) == "UNPAUSED"

    # through connect_job, as every command for the job does
    run = place.start("bf-3")
    place.hold("bf-3")
    place.end(run)
    connected = connect_job(DEFINITIONS["job_b"], Connection(), tmp_path, 1, client=place.client)
    assert any("by detached backfill bf-3" in w for w in connected.warnings)
    assert place.status(place.b) == "UNPAUSED" and place.markers() == {}


def test_a_pause_whose_backfill_still_runs_is_left_alone(place: Place, tmp_path: Path) -> None:
    place.start("bf-1")
    place.hold("bf-1")
    assert restore_stale_workspace_pauses(place.client, "job_b", place.b) == []
    connected = connect_job(DEFINITIONS["job_b"], Connection(), tmp_path, 1, client=place.client)
    assert not any("job_b" in w and "trigger" in w for w in connected.warnings)
    assert place.status(place.b) == "PAUSED"
    assert list(place.markers()) == [paused_file(place.b, "bf-1")]


def test_holding_again_for_the_same_backfill_keeps_one_marker(place: Place) -> None:
    place.start("bf-1")
    place.hold("bf-1")
    assert place.hold("bf-1") == ["the trigger of job 'job_b' stays paused for backfill bf-1"]
    markers = place.markers()
    assert list(markers) == [paused_file(place.b, "bf-1")]
    assert markers[paused_file(place.b, "bf-1")]["original"] == "UNPAUSED"
    assert place.release("bf-1") == ["restored the trigger of job 'job_b': trigger UNPAUSED"]
    assert place.status(place.b) == "UNPAUSED"


@pytest.mark.parametrize(
    ("status", "error"), [(400, UsageError), (403, WorkspaceRejected)], ids=["400", "403"]
)
def test_a_refused_pause_is_one_line_and_puts_back_what_was_paused(
    place: Place, status: int, error: type[Exception]
) -> None:
    place.start("bf-1")
    place.emu.inject_fault("/api/2.2/jobs/update", status=status, skip=1)  # job_c's is refused
    with pytest.raises(error) as raised:
        place.hold("bf-1", {"job_b": place.b, "job_c": place.c})
    message = str(raised.value)
    assert "pause the trigger of job 'job_c'" in message and "\n" not in message
    assert place.status(place.b) == place.status(place.c) == "UNPAUSED"
    assert place.markers() == {}


def test_the_marker_is_written_before_the_pausing_request(place: Place) -> None:
    """A crash between the two leaves a marker (restored by the next command), never a
    paused trigger without one: the marker exists while ``jobs/update`` waits."""
    import threading

    place.start("bf-1")
    place.emu.hold_requests(lambda method, path, body: path.endswith("/jobs/update"))
    held = threading.Thread(target=place.hold, args=("bf-1",))
    held.start()
    try:
        place.emu.wait_for_held_requests(1)
        assert list(place.markers()) == [paused_file(place.b, "bf-1")]
        assert place.status(place.b) == "UNPAUSED"
    finally:
        place.emu.release_requests()
        held.join(timeout=30)
    assert not held.is_alive() and place.status(place.b) == "PAUSED"


def test_a_detached_pause_keeps_the_trigger_s_condition_and_other_settings(
    place: Place,
) -> None:
    """The contract seam (a pause once dropped a trigger's ``condition``): released, and
    restored by the next command after its backfill ended."""
    trigger = {
        "pause_status": "UNPAUSED",
        "table_update": {
            "table_names": ["main.chain.a"],
            "condition": "ALL_UPDATED",
            "min_time_between_triggers_seconds": 60,
            "wait_after_last_change_seconds": 120,
        },
    }
    job = place.emu.create_job("job_d", settings={"trigger": json.loads(json.dumps(trigger))})
    run = place.start("bf-1")
    declared = {"job_d": {k: v for k, v in trigger.items() if k != "pause_status"}}
    place.hold("bf-1", {"job_d": job}, declared)
    # jobs/get never returns the condition: what the pause wrote is seen in the requests
    assert written_trigger(place.emu, job) == {**trigger, "pause_status": "PAUSED"}
    place.release("bf-1", {"job_d": job})
    assert written_trigger(place.emu, job) == trigger

    place.hold("bf-1", {"job_d": job}, declared)
    place.end(run)
    [line] = restore_stale_workspace_pauses(place.client, "job_d", job)
    assert line.startswith("restored the trigger of job 'job_d'")
    assert written_trigger(place.emu, job) == trigger


def _declared(jobs: dict[str, int]) -> dict[str, dict[str, object]]:
    """Each job's trigger as the project declares it, as ``--detach`` records them."""
    return {job: dict(declared_trigger(DEFINITIONS[job]) or {}) for job in jobs}
