"""Steering and following a detached backfill from the command line, against the emulator.

No controller runs here: the journal is written as a controller writes it
(``create_journal`` then ``Ledger.save()`` per tick, through the real WorkspaceClient),
and what a controller would read of the steering is read back with ``control_ops``.
The CLI runs in a second project copy with no local ledger, as on another machine.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.ledger.journal import (
    control_ops,
    create_journal,
    current_control,
    read_journal,
)
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    attempt_token,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.plan.states import RunState
from databricks_bundle_decorators.launch.status.journal_status import (
    JournalPlace,
    JournalView,
    read_view,
    summary_line,
    watch,
)
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import keys_of, write_project

from .clirun import FAST, NIGHTLY_PARAMS, Cli, assert_one_error_line

DAYS = [f"2024-01-0{d}" for d in range(1, 7)]
CONTROLLER_PARAMS = {"backfill_id": "", "job_id": "", "generation": ""}
RUN_NOW = "/api/2.2/jobs/run-now"
ALICE = "alice@example.com"


class Detached:
    """A detached backfill of ``nightly`` over ``DAYS`` whose journal a test drives as
    its controller would: ``tick`` records attempts and saves (one segment each)."""

    def __init__(self, emu: JobsEmulator, launched_from: Path, *, controller: bool = True) -> None:
        self.emu = emu
        self.job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
        self.controller_id = 0
        if controller:  # deployed beside the job, as dbxdec generate adds it
            self.controller_id = emu.create_job(
                "dbxdec_controller", parameters=CONTROLLER_PARAMS, max_concurrent_runs=100
            )
        self.client = emu.workspace_client()
        plan = BackfillPlan("nightly", tuple(Slice(i, (day,)) for i, day in enumerate(DAYS)))
        spec = BackendSpec("databricks", self.job_id, remote_name="nightly", host=emu.url)
        ledger = Ledger.create(launched_from, plan, backend=spec, options=LaunchOptions())
        self.ledger = create_journal(self.client, ledger, job_id=self.job_id, writer="cli:test")
        self.id = ledger.id

    def token(self, index: int) -> str:
        return attempt_token(self.id, self.ledger.slices[index].keys, 1)

    def launch(self, index: int, *, hold: bool = False) -> str:
        """Submit slice ``index``'s first attempt as the controller does; its run id."""
        record = self.ledger.slices[index]
        self.emu.set_outcome(record.keys[0], job_id=self.job_id, hold=hold)
        run_id = self.client.jobs.run_now(
            self.job_id, job_parameters=dict(record.parameters), idempotency_token=self.token(index)
        ).run_id
        self.record(index, "running", str(run_id))
        return str(run_id)

    def record(self, index: int, state: RunState, run_id: str | None) -> None:
        record = self.ledger.slices[index]
        now = time.time()
        ended = now if state in ("succeeded", "failed") else None
        attempt = Attempt(1, self.token(index), state, run_id, submitted_at=now, ended_at=ended)
        self.ledger.update(record.with_attempt(attempt))

    def tick(self) -> None:
        self.ledger.save()

    def place(self) -> JournalPlace:
        return JournalPlace(self.client, self.id, "nightly", self.job_id, "nightly")


@pytest.fixture
def detached(emu: JobsEmulator, workspace_env: JobsEmulator, tmp_path: Path) -> Detached:
    return Detached(emu, tmp_path / "launched-from")


@pytest.fixture
def elsewhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    """``dbxdec`` in a second checkout of the project: no local ledger."""
    return Cli(write_project(tmp_path / "second-copy"), capsys)


def test_status_from_a_second_copy_shows_the_journals_counts(
    detached: Detached, elsewhere: Cli
) -> None:
    detached.record(0, "succeeded", "1")
    detached.record(1, "succeeded", "2")
    detached.launch(2, hold=True)
    detached.record(3, "failed", "4")
    detached.tick()

    code, out, err = elsewhere("status", "nightly", "--backfill", detached.id, "--json")

    assert code == 0, err
    shown = json.loads(out)
    journal = read_journal(detached.client, detached.job_id, detached.id)
    assert shown["counts"] == journal.counts()
    assert shown["counts"] == {
        "pending": 2,
        "submitting": 0,
        "running": 1,
        "succeeded": 2,
        "failed": 1,
        "cancelled": 0,
    }
    assert shown["states"] == {
        DAYS[0]: "succeeded",
        DAYS[1]: "succeeded",
        DAYS[2]: "running",
        DAYS[3]: "failed",
        DAYS[4]: "missing",
        DAYS[5]: "missing",
    }
    assert not (elsewhere.project / ".dbxdec" / "backfills").exists()
    code, out, _ = elsewhere("status", "nightly", "--backfill", detached.id)
    assert code == 0
    assert (
        f"backfill {detached.id}: running: 2 succeeded, 1 running, 1 failed, 0 cancelled, "
        f"2 pending of 6 runs (workspace journal of job nightly (job id {detached.job_id}))"
    ) in out
    # no controller run is active (none was started here): the status says so
    assert f"backfill {detached.id} is not being driven (no controller run is active)" in out
    detached.emu.release()


def test_pause_then_unpause_are_recorded_and_read_back_and_unpause_starts_a_controller(
    detached: Detached, elsewhere: Cli
) -> None:
    detached.emu.hold_runs = True  # the controller run started by unpause stays active
    code, out, err = elsewhere("backfill", "pause", detached.id)
    assert code == 0, err
    assert f"Recorded pause of backfill {detached.id} (request 1, by emulator@example.com)" in out
    ops = control_ops(detached.client, detached.job_id, detached.id)
    assert [(op.op, op.by) for op in ops] == [("pause", "emulator@example.com")]
    assert current_control(ops) == "paused"  # what the controller reads at its next tick
    assert detached.emu.runs(detached.controller_id) == []

    code, out, err = elsewhere("backfill", "unpause", detached.id)
    assert code == 0, err
    ops = control_ops(detached.client, detached.job_id, detached.id)
    assert [op.op for op in ops] == ["pause", "unpause"] and current_control(ops) == "running"
    (controller,) = detached.emu.runs(detached.controller_id)
    assert f"Started controller run {controller.run_id} (none was running)." in out
    (body,) = detached.emu.run_now_bodies(detached.controller_id)
    assert body["idempotency_token"] == f"dbxdec-ctl-{detached.id}-u2"
    assert body["job_parameters"] == {
        "backfill_id": detached.id,
        "job_id": str(detached.job_id),
        "generation": "1",
    }
    code, out, _ = elsewhere("backfill", "unpause", detached.id)  # a controller is active
    assert code == 0 and f"Controller run {controller.run_id} goes on launching." in out
    assert len(detached.emu.runs(detached.controller_id)) == 1
    detached.emu.hold_runs = False
    detached.emu.release()


def test_steering_needs_can_manage_run_directly_or_through_a_group(
    detached: Detached, elsewhere: Cli
) -> None:
    detached.emu.set_job_permissions(
        detached.job_id, [("user", ALICE, "CAN_VIEW"), ("group", "eng", "CAN_MANAGE_RUN")]
    )
    detached.emu.answer_me_as(ALICE, groups=["analysts"])
    code, out, err = elsewhere("backfill", "pause", detached.id)
    assert code == 4 and out == ""
    assert assert_one_error_line(err) == (
        f"Error: {ALICE} may not pause backfill {detached.id}: that needs CAN_MANAGE_RUN on "
        f"job nightly (job id {detached.job_id}), granted to the user or to a group they are "
        "directly in; ask an owner of the job to grant it (a writable /Shared folder is not "
        "enough)"
    )
    assert control_ops(detached.client, detached.job_id, detached.id) == []  # nothing recorded

    detached.emu.answer_me_as(ALICE, groups=["analysts", "eng"])
    code, out, err = elsewhere("backfill", "pause", detached.id)
    assert code == 0, err
    ops = control_ops(detached.client, detached.job_id, detached.id)
    assert [(op.op, op.by) for op in ops] == [("pause", ALICE)]


def _run_now_reply_lost(emu: JobsEmulator, job_id: int, body: dict[str, object]) -> None:
    """A controller's ``run-now`` that the workspace applied but whose reply never came
    back (the controller died waiting): the emulator drops the connection after."""
    emu.inject_fault(RUN_NOW, kind="drop_after", job_id=job_id)
    request = urllib.request.Request(
        f"{emu.url}{RUN_NOW}",
        data=json.dumps({"job_id": job_id, **body}).encode(),
        headers={"Authorization": "Bearer dapi-test", "Content-Type": "application/json"},
    )
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(request, timeout=10)


def test_cancel_with_a_lost_run_now_reply_in_flight_and_no_controller_then_resume(
    detached: Detached, elsewhere: Cli
) -> None:
    emu, job_id = detached.emu, detached.job_id
    detached.launch(0)  # ends at once: succeeded
    emu.wait_until_idle()
    detached.record(0, "succeeded", detached.ledger.slices[0].last.run_id)  # type: ignore[union-attr]
    held = detached.launch(1, hold=True)
    lost_key = DAYS[2]
    emu.set_outcome(lost_key, job_id=job_id, hold=True)
    detached.record(2, "submitting", None)  # recorded before the submit, as always
    detached.tick()
    parameters = dict(detached.ledger.slices[2].parameters)
    _run_now_reply_lost(
        emu, job_id, {"job_parameters": parameters, "idempotency_token": detached.token(2)}
    )
    assert len([r for r in emu.runs(job_id) if r.active]) == 2  # the lost one runs too

    code, out, err = elsewhere("backfill", "cancel", detached.id)

    assert code == 0, err
    assert "No controller is running: cancelling here." in out
    assert "Cancelled 2 runs in flight." in out
    assert [r for r in emu.runs(job_id) if r.active] == []  # nothing queued or running
    assert len(emu.runs(job_id)) == 3  # the lost run was found by its token, not re-run
    tokens = [b["idempotency_token"] for b in emu.run_now_bodies(job_id)]
    # the lost submit and its resend (each sent once more if slow: the launcher's overtaker)
    assert tokens.count(detached.token(2)) >= 2
    journal = read_journal(detached.client, job_id, detached.id)
    assert journal.state == "interrupted"
    assert [r.state for r in journal.slices] == [
        "succeeded",
        "cancelled",
        "cancelled",
        "pending",
        "pending",
        "pending",
    ]
    assert journal.slices[1].last.run_id == held  # type: ignore[union-attr]
    ops = control_ops(detached.client, job_id, detached.id)
    assert current_control(ops) == "cancelled"  # a controller started later stops too

    for day in DAYS:
        emu.set_outcome(day, job_id=job_id)  # no more holds: the resumed runs end
    code, out, err = elsewhere("backfill", "--resume", detached.id, *FAST)

    assert code == 0, out + err
    journal = read_journal(detached.client, job_id, detached.id)
    assert journal.state == "succeeded"
    assert all(r.state == "succeeded" for r in journal.slices)
    assert current_control(control_ops(detached.client, job_id, detached.id)) == "running"
    runs_per_key = {day: keys_of(emu, job_id).count(day) for day in DAYS}
    assert runs_per_key == {DAYS[0]: 1, DAYS[1]: 2, DAYS[2]: 2, **{d: 1 for d in DAYS[3:]}}
    assert sum(r.result_state == "SUCCESS" for r in emu.runs(job_id)) == 6  # each key once


def test_watch_refreshes_until_the_backfill_ends(detached: Detached) -> None:
    detached.record(0, "succeeded", "1")
    detached.record(1, "running", "2")
    detached.tick()
    shown: list[str] = []

    def controller_tick() -> None:  # between two readings the controller finishes
        for index in range(1, len(DAYS)):
            detached.record(index, "succeeded", str(index + 1))
        detached.ledger.set_state("succeeded")
        detached.tick()

    last = watch(
        lambda: read_view(detached.place()),
        lambda view: shown.append(summary_line(view)),
        controller_tick,
    )

    assert isinstance(last, JournalView) and last.ended
    assert shown == [
        f"backfill {detached.id}: running: 1 succeeded, 1 running, 0 failed, 0 cancelled, "
        "4 pending of 6 runs",
        f"backfill {detached.id}: succeeded: 6 succeeded, 0 running, 0 failed, 0 cancelled, "
        "0 pending of 6 runs",
    ]


def test_watch_and_backfills_on_the_command_line(detached: Detached, elsewhere: Cli) -> None:
    detached.record(0, "succeeded", "1")
    detached.tick()
    code, out, err = elsewhere(
        "backfill", "watch", detached.id, "--interval", "0", "--refreshes", "3"
    )
    assert code == 0, err
    assert out.count(f"backfill {detached.id}: running") == 1  # an unchanged line once

    code, out, err = elsewhere("backfills", "--workspace", "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["id"], row["where"], row["state"], row["succeeded"], row["runs"]) == (
        detached.id,
        "workspace",
        "running",
        1,
        6,
    )
    code, out, _ = elsewhere("backfills", "--workspace")
    assert code == 0 and "where" in out and "workspace" in out and detached.id in out

    for index in range(1, len(DAYS)):
        detached.record(index, "failed", str(index + 1))
    detached.ledger.set_state("failed")
    detached.tick()
    code, out, err = elsewhere("backfill", "watch", detached.id, "--interval", "0")
    assert code == 1 and f"backfill {detached.id}: failed" in out
    assert assert_one_error_line(err) == (
        f"Error: backfill {detached.id} ended failed: see dbxdec status nightly --backfill "
        f"{detached.id}; go on with dbxdec backfill --resume {detached.id}"
    )


def test_ctrl_c_stops_watching_and_leaves_the_backfill_running(
    detached: Detached, elsewhere: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ctrl_c(seconds: float) -> None:  # Ctrl-C lands in the wait between two readings
        raise KeyboardInterrupt

    monkeypatch.setattr(
        "databricks_bundle_decorators.cli.commands.steer_commands.time.sleep", ctrl_c
    )
    code, out, err = elsewhere("backfill", "watch", detached.id)
    assert code == 130
    assert out.count(f"backfill {detached.id}: running") == 1
    assert f"Stopped watching; backfill {detached.id} goes on in the workspace." in err
    assert control_ops(detached.client, detached.job_id, detached.id) == []
    assert read_journal(detached.client, detached.job_id, detached.id).state == "running"


def test_cancel_with_a_controller_active_only_records_the_request(
    detached: Detached, elsewhere: Cli
) -> None:
    held = detached.launch(0, hold=True)
    detached.tick()
    detached.emu.hold_runs = True
    controller = detached.emu.workspace_client().jobs.run_now(
        detached.controller_id,
        job_parameters={"backfill_id": detached.id, "job_id": str(detached.job_id)},
    )
    code, out, err = elsewhere("backfill", "cancel", detached.id)
    assert code == 0, err
    assert f"Controller run {controller.run_id} cancels the 1 run in flight and stops." in out
    (run,) = [r for r in detached.emu.runs(detached.job_id)]
    assert str(run.run_id) == held and run.active  # the controller cancels it, not this
    journal = read_journal(detached.client, detached.job_id, detached.id)
    assert journal.state == "running"  # no segment written by the steering command
    assert current_control(control_ops(detached.client, detached.job_id, detached.id)) == (
        "cancelled"
    )
    detached.emu.hold_runs = False
    detached.emu.release()


def test_unpause_without_a_deployed_controller_says_how_to_deploy_it(
    emu: JobsEmulator, workspace_env: JobsEmulator, tmp_path: Path, elsewhere: Cli
) -> None:
    detached = Detached(emu, tmp_path / "launched-from", controller=False)
    code, _, err = elsewhere("backfill", "unpause", detached.id)
    assert code == 2
    assert "no deployed job named 'dbxdec_controller'" in assert_one_error_line(err)
    assert control_ops(detached.client, detached.job_id, detached.id) == []  # not recorded
    code, _, err = elsewhere("backfill", "pause", "nightly-x")
    assert code == 2
    assert "'nightly-x' is not a backfill id" in assert_one_error_line(err)
