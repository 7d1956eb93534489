"""``dbxdec backfill A --downstream --detach``: a controller run in the workspace drives
every job's runs, holds the dependants' triggers paused across its generations and puts
them back at the end -- or, killed for good, leaves them to the next command.

Real: ``--detach`` (plan, claims, journal, the pause), the controller as a subprocess of
the Jobs API emulator (``python -m ...launch.control.entry``), each job's runs on its
own deployment. Stand-in: the runs of A, B and C, simulated by the emulator. Tests sync
on the emulator's conditions, never on sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.control.controller import read_hold
from databricks_bundle_decorators.launch.control.detach import Detached, detach_backfill
from databricks_bundle_decorators.launch.launcher import plan_backfill
from databricks_bundle_decorators.launch.ledger.journal import read_journal
from databricks_bundle_decorators.launch.plan.request import BackfillRequest
from databricks_bundle_decorators.launch.status.journal_status import JournalPlace
from databricks_bundle_decorators.launch.steer.steering import steer
from databricks_bundle_decorators.testing import JobsEmulator
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

from .controller_fixtures import TOKEN, controller_job, tune_controller
from .test_downstream_databricks import KEY, _before, deploy, request, status
from .trigger_chain import registry

PAUSED = "/Shared/dbxdec/paused"


@dataclass
class Chain:
    emu: JobsEmulator
    ids: dict[str, int]
    controller: int
    root: Path

    def detach(self, backfill: BackfillRequest | None = None) -> Detached:
        prepared = plan_backfill(
            backfill or request(),
            root=self.root,
            registry=registry,
            warehouse=self.root / "wh",
            client=self.emu.workspace_client(),
        )
        return detach_backfill(prepared, root=self.root)

    def tune(self, **tuning: str) -> None:
        tune_controller(self.emu, self.controller, **tuning)

    def wait_held(self, job: str, key: str) -> None:
        """Until the run of ``job`` over ``key`` (held by the test) is active."""
        self.emu.wait_for(
            lambda runs: any(r.job_parameters[KEY] == key and r.active for r in runs),
            job_id=self.ids[job],
            what=f"{job}'s held run of {key}",
        )

    def keys(self, job: str) -> list[str]:
        return sorted(r.job_parameters[KEY] for r in self.emu.runs(self.ids[job]))

    def markers(self) -> list[str]:
        return sorted(self.emu.workspace_files(PAUSED))

    def outputs(self) -> str:
        return "\n".join(
            (a.stdout + a.stderr).decode(errors="replace") for a in processes_of(self.emu).outputs()
        )

    def wait_controllers_ended(self, at_least: int = 1) -> None:
        """Until ``at_least`` controller runs exist and none is active. Each generation is a
        new Python process (with coverage's tracing under make test): on a loaded 2-core
        machine a chain of them took over the usual 60 s, so the wait allows 240 s."""

        def ended(runs: list) -> bool:  # type: ignore[type-arg]
            return len(runs) >= at_least and not any(r.active for r in runs)

        self.emu.wait_for(
            ended, job_id=self.controller, what="every controller run ended", timeout=240
        )


@pytest.fixture
def chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Chain]:
    monkeypatch.delenv("DATABRICKS_WAREHOUSE_ID", raising=False)
    with JobsEmulator(token=TOKEN) as emu:
        emu.default_duration = 0.05
        ids = deploy(emu)
        ctl = controller_job(emu)
        processes_of(emu).extra_env = {"DBXDEC_CLAIMS_DIR": "/Shared/dbxdec/claims"}
        yield Chain(emu, ids, ctl, tmp_path)


def test_the_controller_runs_each_job_after_what_it_reads_blocks_exactly_and_restores_triggers(
    chain: Chain,
) -> None:
    emu, ids = chain.emu, chain.ids
    emu.set_outcome("2024-01-31", job_id=ids["job_a"], fail_attempts=99)
    processes = processes_of(emu)
    processes.hold_starts = True  # the controller starts when the test has looked
    detached = chain.detach()
    # paused by --detach itself, before any controller code ran: no run of any job yet
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "PAUSED"
    assert status(emu, ids["job_other"]) == "UNPAUSED"
    assert len(chain.markers()) == 2 and emu.run_now_bodies(ids["job_a"]) == []
    processes.release_starts()
    chain.wait_controllers_ended()

    out = chain.outputs()
    assert chain.keys("job_a") == ["2024-01-30", "2024-01-31", "2024-02-01"], out
    assert chain.keys("job_b") == ["2024-01-30", "2024-02-02"]  # 01-31, 02-01 read A's 01-31
    assert chain.keys("job_c") == []  # January and February each read a blocked B key
    ledger = read_journal(emu.workspace_client(), ids["job_a"], detached.backfill_id)
    states = {(r.job, r.keys[0]): r.state for r in ledger.slices}
    assert states[("job_b", "2024-01-31")] == states[("job_c", "2024-02-01")] == "pending"
    assert ledger.state == "failed"
    assert "blocked" in out
    # each B run started after the A runs it reads ended
    a_end = {r.job_parameters[KEY]: r.ended for r in emu.runs(ids["job_a"])}
    for run in emu.runs(ids["job_b"]):
        day = run.job_parameters[KEY]
        read = [d for d in (_before(day), day) if d in a_end]  # lookback 1
        assert all(a_end[d] is not None and a_end[d] <= run.created for d in read)
    # the end: no catch-up without a warehouse, said; the triggers back as they were
    assert "catch-up of job_b, job_c was not launched" in out
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    assert chain.markers() == []


def test_the_triggers_stay_paused_across_a_handover_and_are_restored_by_the_last_run(
    chain: Chain,
) -> None:
    emu, ids = chain.emu, chain.ids
    chain.tune(handover_after="2")  # two handovers while held; few processes once released
    emu.set_outcome("2024-02-01", job_id=ids["job_b"], hold=True)
    chain.detach()
    emu.wait_for(lambda runs: len(runs) >= 3, job_id=chain.controller, what="two handovers")
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "PAUSED"
    emu.release("2024-02-01")
    chain.wait_controllers_ended(3)
    assert chain.keys("job_c") == ["2024-01-01", "2024-02-01"], chain.outputs()
    assert chain.keys("job_b") == ["2024-01-30", "2024-01-31", "2024-02-01", "2024-02-02"]
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    assert chain.markers() == []


def test_a_controller_cancelled_for_good_leaves_the_triggers_to_the_next_command(
    chain: Chain,
) -> None:
    emu, ids = chain.emu, chain.ids
    emu.set_outcome("2024-01-31", job_id=ids["job_b"], hold=True)
    detached = chain.detach()
    chain.wait_held("job_b", "2024-01-31")
    client = emu.workspace_client()
    client.jobs.cancel_run(detached.controller.run_id)  # a person: the run ends for good
    chain.wait_controllers_ended()
    assert status(emu, ids["job_b"]) == "PAUSED"  # nobody restored it
    assert len(chain.markers()) == 2

    # the next command that connects to job_b finds no live controller and restores it
    prepared = plan_backfill(
        BackfillRequest(job="job_b", keys=("2024-01-01",)),
        root=chain.root,
        registry=registry,
        warehouse=chain.root / "wh",
        client=client,
    )
    assert prepared.backend is not None
    prepared.backend.close()
    assert status(emu, ids["job_b"]) == "UNPAUSED"
    assert any("job_b" in w for w in prepared.warnings), prepared.warnings


def test_cancel_of_a_detached_downstream_backfill_cancels_every_jobs_run_and_restores(
    chain: Chain,
) -> None:
    emu, ids = chain.emu, chain.ids
    # B's 01-31 feeds C's January and B's 02-01 C's February: both held, so no C run is
    # ready before the cancel (setup only: with 02-01 free, C's February could start
    # first on a slow machine, and the cancel would then cancel it)
    emu.set_outcome("2024-01-31", job_id=ids["job_b"], hold=True)
    emu.set_outcome("2024-02-01", job_id=ids["job_b"], hold=True)
    detached = chain.detach()
    chain.wait_held("job_b", "2024-01-31")
    client = emu.workspace_client()
    place = JournalPlace(client, detached.backfill_id, "job_a", ids["job_a"], "job_a")
    assert steer(place, "cancel").controller_run is not None  # the controller carries it out
    chain.wait_controllers_ended()
    held = [r for r in emu.runs(ids["job_b"]) if r.job_parameters[KEY] == "2024-01-31"]
    assert [r.result_state for r in held] == ["CANCELED"], chain.outputs()
    assert chain.keys("job_c") == []
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    assert chain.markers() == []
    assert "catch-up" not in chain.outputs()  # cancelled: restored, not caught up


def test_the_run_that_ends_it_catches_up_through_the_warehouse_named_at_detach(
    chain: Chain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wiring: ``--detach`` records the warehouse and each dependant's module; the
    controller run that ends the backfill imports the module and asks the warehouse
    (which keys a catch-up owes is shown on real Delta in test_downstream_catch_up.py).
    This warehouse does not exist: each dependant's catch-up is one line, and the
    triggers are restored all the same."""
    emu, ids = chain.emu, chain.ids
    monkeypatch.setenv("DATABRICKS_WAREHOUSE_ID", "wh-gone")
    detached = chain.detach()
    hold = read_hold(emu.workspace_client(), ids["job_a"], detached.backfill_id)
    assert hold is not None and hold.warehouse_id == "wh-gone"
    assert hold.dependants == {"job_b": ids["job_b"], "job_c": ids["job_c"]}
    assert hold.modules == {"job_b": "tests.launch.trigger_chain"} | {
        "job_c": "tests.launch.trigger_chain"
    }
    chain.wait_controllers_ended()
    out = chain.outputs()
    assert "was not launched: no SQL warehouse" not in out
    assert "job 'job_b': no catch-up" in out or "the catch-up stopped" in out, out
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    assert chain.markers() == []


def test_undo_of_a_detached_backfill_still_running_is_refused_in_one_line(chain: Chain) -> None:
    from databricks_bundle_decorators.backfill.wire import UndoOrder, order_in
    from databricks_bundle_decorators.errors import UsageError
    from databricks_bundle_decorators.launch.operations.undo import prepare_undo

    emu, ids = chain.emu, chain.ids
    emu.set_outcome("2024-01-31", job_id=ids["job_b"], hold=True)
    detached = chain.detach()
    chain.wait_held("job_b", "2024-01-31")
    with pytest.raises(UsageError) as refused:
        prepare_undo(
            detached.backfill_id, root=chain.root, project_loader=lambda: (None, registry),  # type: ignore[arg-type,return-value]
            client=emu.workspace_client(),
        )  # fmt: skip
    line = refused.value.render()
    assert "is detached and still running" in line and "dbxdec backfill cancel" in line
    assert "\n" not in line
    undo_runs = [
        b for b in emu.run_now_bodies() if isinstance(order_in(b["job_parameters"]), UndoOrder)
    ]
    assert not undo_runs
    emu.release("2024-01-31")
    chain.wait_controllers_ended()


def test_a_journal_s_undo_records_are_in_the_journal_any_machine_reads(chain: Chain) -> None:
    from databricks_bundle_decorators.launch.ledger.journal import open_journal

    emu, ids = chain.emu, chain.ids
    detached = chain.detach()
    chain.wait_controllers_ended()
    client = emu.workspace_client()
    ledger = open_journal(client, ids["job_a"], detached.backfill_id, writer="undo:test")
    assert ledger.undone == frozenset()
    ledger.record_undone("main.chain.a", 7)
    ledger.record_undone("main.chain.a", 7)  # sent again: one record
    ledger.record_undone("main.chain.b", 3)
    other = open_journal(client, ids["job_a"], detached.backfill_id, writer="undo:elsewhere")
    assert other.undone == {("main.chain.a", 7), ("main.chain.b", 3)}
    # the records are the journal's own (its segments): the backfill reads as it was
    assert read_journal(client, ids["job_a"], detached.backfill_id).state == "succeeded"


def test_a_resumed_detach_holds_what_it_held_before_and_what_the_project_adds(
    chain: Chain,
) -> None:
    """``--detach`` of a resumed backfill records the union of the dependants: those the
    first detach paused are still released by the run that ends it."""
    from databricks_bundle_decorators.launch.control.controller import TriggerHold, start_hold

    emu, ids = chain.emu, chain.ids
    processes = processes_of(emu)
    processes.hold_starts = True
    detached = chain.detach()  # B and C
    declared = {"job_other": {"table_update": {"table_names": ["main.other.x"]}}}
    added = TriggerHold({"job_other": ids["job_other"]}, {"job_other": "x"}, None, declared)
    client = emu.workspace_client()
    start_hold(
        client, added, job_id=ids["job_a"], backfill_id=detached.backfill_id,
        controller_job_id=chain.controller,
    )  # fmt: skip
    hold = read_hold(client, ids["job_a"], detached.backfill_id)
    assert hold is not None and set(hold.dependants) == {"job_b", "job_c", "job_other"}
    assert status(emu, ids["job_other"]) == "PAUSED" and len(chain.markers()) == 3
    processes.release_starts()
    chain.wait_controllers_ended()
    assert {status(emu, ids[j]) for j in ("job_b", "job_c", "job_other")} == {"UNPAUSED"}
    assert chain.markers() == []


def test_a_controller_whose_principal_lost_can_manage_holds_nothing_and_says_so(
    chain: Chain,
) -> None:
    """The ACL changed between ``--detach`` and the controller's start: the controller
    reads its own level (SCIM ``Me``) before it holds anything, and says in one line that
    it holds none of the triggers; the backfill goes on."""
    emu, ids = chain.emu, chain.ids
    processes = processes_of(emu)
    processes.hold_starts = True
    chain.detach()  # as the jobs' owner: paused
    assert status(emu, ids["job_b"]) == "PAUSED"
    me = emu.workspace_client().current_user.me().user_name
    emu.set_job_permissions(
        ids["job_b"], [("user", "boss@example.com", "IS_OWNER"), ("user", me, "CAN_MANAGE_RUN")]
    )
    processes.release_starts()
    chain.wait_controllers_ended()
    out = chain.outputs()
    assert (
        "the dependants' triggers could not be held paused: --downstream: this controller "
        f"run's principal {me} has CAN_MANAGE_RUN on job 'job_b' (job id {ids['job_b']}); "
        "pausing its trigger (jobs/update) needs CAN_MANAGE (or IS_OWNER), so this run holds "
        "none of the triggers (the backfill goes on)"
    ) in out, out
    assert chain.keys("job_b") == ["2024-01-30", "2024-01-31", "2024-02-01", "2024-02-02"]
