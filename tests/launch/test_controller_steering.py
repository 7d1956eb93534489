"""Steering a detached backfill whose controller really runs (issue 28, "Must show").

The controller is a real subprocess of the emulator (:mod:`.controller_fixtures`). The
tests steer it with :func:`~databricks_bundle_decorators.launch.steer.steering.steer`
(what ``dbxdec backfill pause|unpause|cancel ID`` runs, permission check included) from
a :class:`JournalPlace` alone -- no local ledger, as from a second checkout -- and sync
on the emulator's ``wait_for`` and on the lines the controller prints
(``wait_for_output``), never on sleeps.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.launcher import Pacing, ResumeRequest, run_backfill
from databricks_bundle_decorators.launch.ledger.journal import read_journal
from databricks_bundle_decorators.launch.status.journal_status import JournalPlace, read_view
from databricks_bundle_decorators.launch.status.progress import JsonReporter
from databricks_bundle_decorators.launch.steer.steering import (
    driving_line,
    prepare_journal_resume,
    steer,
)
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

from .controller_fixtures import Workspace, open_workspace
from .test_scheduler import day

KEYS = [day(i) for i in range(6)]  # cap 4: four run, two wait
IDLE = "paused with no run in flight"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    yield from open_workspace(tmp_path, monkeypatch)


def _place(workspace: Workspace, backfill_id: str) -> JournalPlace:
    return JournalPlace(
        workspace.emu.workspace_client(), backfill_id, "nightly", workspace.job_id, "nightly"
    )


def _every_key_once(workspace: Workspace) -> None:
    runs = workspace.emu.runs(workspace.job_id)
    succeeded = [r.job_parameters["backfill_key"] for r in runs if r.result_state == "SUCCESS"]
    assert sorted(succeeded) == sorted(KEYS), workspace.outputs()
    assert workspace.keys_run() == {k: 1 for k in KEYS}, workspace.outputs()


def _four_running(workspace: Workspace) -> None:
    workspace.emu.wait_for(
        lambda runs: len([r for r in runs if r.job_id == workspace.job_id]) >= 4,
        what="four runs of the backfill in flight",
    )


def test_pause_launches_nothing_and_unpause_finishes_every_key_once(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    processes = processes_of(emu)
    emu.hold_runs = True
    detached = workspace.detach(registry, KEYS)
    _four_running(workspace)
    place = _place(workspace, detached.backfill_id)

    paused = steer(place, "pause")
    assert paused.controller_run is not None  # the live controller carries it out
    processes.wait_for_output(f"backfill {detached.backfill_id} is now paused")
    before = len(emu.launch_bodies(workspace.job_id))
    emu.release()  # the four in flight end; the controller sees them end, paused
    processes.wait_for_output(IDLE)  # said once nothing is in flight (after its launches)
    launched_while_paused = len(emu.launch_bodies(workspace.job_id)) - before
    assert launched_while_paused == 0, workspace.outputs()
    assert before == 4
    assert read_view(place).control == "paused"

    unpaused = steer(place, "unpause")
    assert not unpaused.started  # the paused controller is still alive: it goes on
    workspace.wait_backfill_done(len(KEYS))
    _every_key_once(workspace)
    assert read_journal(place.client, workspace.job_id, detached.backfill_id).state == "succeeded"


def test_cancel_leaves_no_run_queued_or_running_and_resume_from_elsewhere_finishes(
    workspace: Workspace, registry: Registry, tmp_path: Path
) -> None:
    emu = workspace.emu
    emu.hold_runs = True
    detached = workspace.detach(registry, KEYS)
    _four_running(workspace)
    place = _place(workspace, detached.backfill_id)

    steer(place, "cancel")
    emu.wait_for(lambda runs: not any(r.active for r in runs), what="nothing queued or running")
    ours = emu.runs(workspace.job_id)
    assert not any(r.active for r in ours)
    assert len(ours) == 4 and {r.result_state for r in ours} == {"CANCELED"}
    assert read_journal(place.client, workspace.job_id, detached.backfill_id).state != "running"

    # --resume ID from a second checkout: no local ledger there, the journal is read
    emu.hold_runs = False
    second = tmp_path / "second-copy"
    second.mkdir()
    resumed = prepare_journal_resume(
        ResumeRequest(detached.backfill_id, pacing=Pacing(max_concurrent=4, poll_interval=0.01)),
        root=second,
        project_loader=lambda: (None, registry),  # type: ignore[arg-type,return-value]
        client=place.client,
    )
    assert run_backfill(resumed, JsonReporter(io.StringIO())).exit_code == 0
    assert not (second / ".dbxdec").exists()
    runs = emu.runs(workspace.job_id)
    succeeded = [r.job_parameters["backfill_key"] for r in runs if r.result_state == "SUCCESS"]
    assert sorted(succeeded) == sorted(KEYS)


def test_a_person_cancelling_the_controller_run_loses_nothing_and_unpause_finishes(
    workspace: Workspace, registry: Registry
) -> None:
    emu = workspace.emu
    emu.hold_runs = True
    detached = workspace.detach(registry, KEYS)
    _four_running(workspace)
    place = _place(workspace, detached.backfill_id)
    processes_of(emu).wait_for_output("drives backfill")
    (controller,) = emu.runs(workspace.controller_job)

    place.client.jobs.cancel_run(controller.run_id)  # a person, in the Jobs UI
    emu.wait_for(
        lambda runs: all(not r.active for r in runs if r.job_id == workspace.controller_job),
        what="the controller run ended",
    )
    ledger = read_journal(place.client, workspace.job_id, detached.backfill_id)
    assert ledger.counts()["failed"] == 0 and ledger.counts()["cancelled"] == 0
    view = read_view(place)
    line = driving_line(place, view.ledger.state, view.control)
    assert line == (
        f"backfill {detached.backfill_id} is not being driven (no controller run is active): "
        f"nothing is launched until dbxdec backfill unpause {detached.backfill_id} starts a "
        "controller run"
    )

    emu.release()  # the runs it left in flight end on their own
    unpaused = steer(place, "unpause")
    assert unpaused.started
    workspace.wait_backfill_done(len(KEYS))  # the new run takes the dead run's claim
    _every_key_once(workspace)
    assert driving_line(place, "succeeded", "running") is None


def test_cancel_learns_the_run_of_a_lost_run_now_reply_by_its_token_and_cancels_it(
    workspace: Workspace, registry: Registry, tmp_path: Path
) -> None:
    """Each of the first four ``run-now`` is applied and its replies dropped (the SDK gives
    up within ``client_timeout``); the controller dies at its next submission; its retry
    waits at its claim while the cancel is recorded, then learns each run by re-sending
    its journaled token (its first turn, before any dispatch) and cancels it."""
    emu = workspace.emu
    workspace.tune(client_timeout="1")  # one request per SDK call: a dropped reply stays lost
    # and three per submission: the backend sends a slow run-now twice more (its Overtaker)
    emu.inject_fault("/api/2.2/jobs/run-now", kind="drop_after", job_id=workspace.job_id, count=12)
    workspace.kill_at("before-submit:5")  # the first re-send of a lost reply: never sent
    emu.hold_runs = True
    detached = workspace.detach(registry, KEYS)
    _four_running(workspace)
    claim = f"/Shared/dbxdec/claims/job-{workspace.job_id}/{detached.backfill_id}.json"
    emu.hold_requests(
        lambda method, path, body: body.get("path") == claim and body.get("overwrite") is False
    )
    emu.wait_for_held_requests(1)  # the retry of the killed controller read the journal
    place = _place(workspace, detached.backfill_id)
    open_attempts = [
        r.last
        for r in read_journal(place.client, workspace.job_id, detached.backfill_id).slices
        if r.last
    ]
    assert [(a.state, a.run_id) for a in open_attempts] == [("submitting", None)] * 4
    assert emu.faults["drop_after /api/2.2/jobs/run-now"] == 12

    cancelled = steer(place, "cancel")
    assert cancelled.controller_run is not None  # the live controller carries it out
    emu.release_requests()
    emu.wait_for(lambda runs: not any(r.active for r in runs), what="nothing queued or running")
    assert workspace.attempts() == [137, 0], workspace.outputs()
    ours = emu.runs(workspace.job_id)
    assert len(ours) == 4 and {r.result_state for r in ours} == {"CANCELED"}
    tokens = Counter(b["idempotency_token"] for b in emu.run_now_bodies(workspace.job_id))
    # each sent three times, lost; re-sent, answered (and that re-send, if slow, once more)
    assert set(tokens) == {a.token for a in open_attempts} and min(tokens.values()) >= 4
    ledger = read_journal(place.client, workspace.job_id, detached.backfill_id)
    assert ledger.state == "interrupted"
    by_token = {r.idempotency_token: str(r.run_id) for r in ours}
    for record in ledger.slices[:4]:
        assert record.last is not None and record.last.state == "cancelled"
        assert record.last.run_id == by_token[record.last.token]  # learnt, recorded

    emu.hold_runs = False  # --resume ID from a second checkout finishes every key once
    second = tmp_path / "second-copy"
    second.mkdir()
    resumed = prepare_journal_resume(
        ResumeRequest(detached.backfill_id, pacing=Pacing(max_concurrent=4, poll_interval=0.01)),
        root=second,
        project_loader=lambda: (None, registry),  # type: ignore[arg-type,return-value]
        client=place.client,
    )
    assert run_backfill(resumed, JsonReporter(io.StringIO())).exit_code == 0
    runs = emu.runs(workspace.job_id)
    succeeded = [r.job_parameters["backfill_key"] for r in runs if r.result_state == "SUCCESS"]
    assert sorted(succeeded) == sorted(KEYS)
    assert len({r.idempotency_token for r in runs}) == len(runs) == len(KEYS) + 4
