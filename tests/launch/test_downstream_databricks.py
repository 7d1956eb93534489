"""``dbxdec backfill A --downstream`` on Databricks, through the real WorkspaceClient and
the Jobs API emulator (simulated runs, no Spark): each job's runs on its own deployment,
the dependants' table-update triggers paused while it runs and restored after, also by
the next command after the launcher was killed."""

from __future__ import annotations

import io
import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.launcher import plan_backfill, run_backfill
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.launch.ledger.marker import paused_dir
from databricks_bundle_decorators.launch.operations.downstream_triggers import with_trigger_hold
from databricks_bundle_decorators.launch.plan.options import Pacing
from databricks_bundle_decorators.launch.plan.request import (
    BackfillRequest,
    Connection,
    ResumeRequest,
)
from databricks_bundle_decorators.launch.prepare.resume import prepare_resume
from databricks_bundle_decorators.launch.status.progress import JsonReporter
from databricks_bundle_decorators.testing import JobsEmulator

from .trigger_chain import DEFINITIONS, TRIGGERS, marker_path, registry

DAYS = ("2024-01-30", "2024-01-31", "2024-02-01")
KEY = "backfill_key"  # the job parameter naming a run's key (emulator's outcome key)


def deploy(emu: JobsEmulator) -> dict[str, int]:
    """Every job of the chain deployed under its own name, with its trigger."""
    ids = {}
    for name in DEFINITIONS:
        settings: dict[str, object] = {}
        if name in TRIGGERS:
            settings["trigger"] = json.loads(json.dumps(TRIGGERS[name]))
        ids[name] = emu.create_job(name, settings=settings)
    return ids


def status(emu: JobsEmulator, job_id: int) -> str:
    return str(emu.job_settings(job_id)["trigger"].get("pause_status", "UNPAUSED"))


def request() -> BackfillRequest:
    return BackfillRequest(
        job="job_a",
        start=DAYS[0],
        end=DAYS[-1],
        downstream=True,
        connection=Connection(),
        pacing=Pacing(max_concurrent=8, poll_interval=0.01),
    )


class Lines(JsonReporter):
    """A reporter that keeps the warning lines (pauses, restores, the catch-up)."""

    def __init__(self) -> None:
        super().__init__(io.StringIO())
        self.lines: list[str] = []

    def __call__(self, event: object) -> None:
        message = getattr(event, "message", None)
        if getattr(event, "kind", None) == "warning" and message:
            self.lines.append(str(message))
        super().__call__(event)  # type: ignore[arg-type]


def test_dependant_triggers_are_paused_while_it_runs_and_each_key_waits_for_what_it_reads(
    emu: JobsEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABRICKS_WAREHOUSE_ID", raising=False)
    ids = deploy(emu)
    client = emu.workspace_client()
    prepared = plan_backfill(
        request(), root=tmp_path, registry=registry, warehouse=tmp_path / "wh", client=client
    )
    prepared.options = replace(prepared.options, max_poll_interval=0.1)  # no slow polls
    emu.hold_runs = True
    reporter = Lines()
    summary: list[object] = []
    launcher = threading.Thread(target=lambda: summary.append(run_backfill(prepared, reporter)))
    launcher.start()
    try:
        emu.wait_for(lambda runs: len(runs) >= 1, job_id=ids["job_a"], what="A's first run")
        # from inside the backfill: B and C watch tables it writes, job_other does not
        assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "PAUSED"
        assert status(emu, ids["job_other"]) == "UNPAUSED"
        assert marker_path(tmp_path, "job_b", ids["job_b"]).exists()
    finally:
        emu.hold_runs = False
        emu.release()
        launcher.join(timeout=120)
    assert not launcher.is_alive() and summary
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    assert not marker_path(tmp_path, "job_b", ids["job_b"]).exists()
    assert any("catch-up of job_b, job_c was not launched" in line for line in reporter.lines)

    # each job's runs went to its own deployment, and B's K after A's K-1 and K ended
    runs = {name: emu.runs(ids[name]) for name in ("job_a", "job_b", "job_c")}
    a_end = {r.job_parameters[KEY]: r.ended for r in runs["job_a"]}
    assert sorted(a_end) == list(DAYS)
    b_keys = sorted(r.job_parameters[KEY] for r in runs["job_b"])
    assert b_keys == [*DAYS, "2024-02-02"]  # lookback 1: A's 02-01 feeds B's 02-02
    for run in runs["job_b"]:
        day = run.job_parameters[KEY]
        read = [d for d in DAYS if d in (day, _before(day))]
        assert run.created is not None
        assert all(a_end[d] is not None and a_end[d] <= run.created for d in read), day
    c_months = sorted(r.job_parameters[KEY] for r in runs["job_c"])
    assert c_months == ["2024-01-01", "2024-02-01"]
    b_end = {r.job_parameters[KEY]: r.ended for r in runs["job_b"]}
    for run in runs["job_c"]:  # each month after every B key of that month ended
        month = run.job_parameters[KEY][:7]
        read = [end for day, end in b_end.items() if day.startswith(month)]
        assert read and all(end is not None and end <= run.created for end in read), month
    assert emu.runs(ids["job_other"]) == []  # it reads nothing the backfill writes


def test_a_resume_after_a_killed_launcher_restores_the_dependants_triggers(
    emu: JobsEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABRICKS_WAREHOUSE_ID", raising=False)
    ids = deploy(emu)
    client = emu.workspace_client()
    prepared = plan_backfill(
        request(), root=tmp_path, registry=registry, warehouse=tmp_path / "wh", client=client
    )
    assert prepared.hold is not None
    held = prepared.hold(lambda line: None, _outcome())
    held.__enter__()  # the launcher paused them, then was killed: no __exit__ runs
    prepared.ledger.save()
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "PAUSED"
    assert marker_path(tmp_path, "job_b", ids["job_b"]).exists()
    _forget_holder(tmp_path)

    backfill_id = list_ledgers(tmp_path)[0].id
    resumed = prepare_resume(
        ResumeRequest(backfill_id, pacing=Pacing(poll_interval=0.01)),
        root=tmp_path,
        project_loader=lambda: (None, registry),  # type: ignore[arg-type,return-value]
        client=client,
    )

    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    assert any("restored the trigger of job 'job_b'" in w for w in resumed.warnings)
    assert not marker_path(tmp_path, "job_b", ids["job_b"]).exists()
    held.__exit__(None, None, None)  # the dead launcher's block: nothing left to restore
    assert status(emu, ids["job_b"]) == "UNPAUSED"

    # the resumed backfill holds the triggers again while it runs, and restores them
    resumed = with_trigger_hold(resumed, root=tmp_path)
    assert resumed.hold is not None
    resumed.options = replace(resumed.options, max_poll_interval=0.1)
    reporter = Lines()
    assert run_backfill(resumed, reporter).exit_code == 0
    assert "paused the trigger of job 'job_b' for the backfill" in " ".join(reporter.lines)
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
    assert sorted(r.job_parameters[KEY] for r in emu.runs(ids["job_c"])) == [
        "2024-01-01",
        "2024-02-01",
    ]  # each job's runs on its own deployment after the resume too


def _before(day: str) -> str:
    from datetime import date, timedelta

    return (date.fromisoformat(day) - timedelta(days=1)).isoformat()


def _outcome() -> object:
    from databricks_bundle_decorators.launch.prepare.prepared import RunOutcome

    return RunOutcome()


def _forget_holder(root: Path) -> None:
    """The markers' holder is this process, alive: make it one that no longer runs, as
    a SIGKILLed launcher's would be."""
    for marker in paused_dir(root).glob("*/*.json"):
        data = json.loads(marker.read_text())
        data["pid"] = 2**22 + 12345  # above pid_max's default: no such process
        marker.write_text(json.dumps(data))


def test_the_catch_up_is_launched_at_the_end_before_the_triggers_are_restored(
    emu: JobsEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wiring only: which keys the catch-up owes is worked out on real Delta in
    test_trigger_pause_catch_up.py; here the call is recorded where it is made."""
    from databricks_bundle_decorators.launch.operations import downstream_triggers
    from databricks_bundle_decorators.launch.operations.trigger_catch_up import CatchUpRun

    ids = deploy(emu)
    calls: list[dict[str, object]] = []

    def recorded(client: object, warehouse_id: str, jobs: list[str], **kw: object) -> list[object]:
        calls.append(
            {
                "warehouse": warehouse_id,
                "jobs": list(jobs),
                "backfill_id": kw["backfill_id"],
                "paused": [status(emu, ids[j]) for j in jobs],  # not yet restored
                "runs_active": [r.run_id for r in emu.runs() if r.active],
            }
        )
        return [CatchUpRun("job_b", ("2024-02-03",), 99, {}, "job 'job_b': catch-up run 99")]

    monkeypatch.setattr(downstream_triggers, "catch_up_dependants", recorded)
    monkeypatch.setenv("DATABRICKS_WAREHOUSE_ID", "wh-1")
    prepared = plan_backfill(
        request(), root=tmp_path, registry=registry, warehouse=tmp_path / "wh",
        client=emu.workspace_client(),
    )  # fmt: skip
    prepared.options = replace(prepared.options, max_poll_interval=0.1)
    reporter = Lines()

    run_backfill(prepared, reporter)

    assert calls == [
        {
            "warehouse": "wh-1",
            "jobs": ["job_b", "job_c"],
            "backfill_id": prepared.ledger.id,
            "paused": ["PAUSED", "PAUSED"],
            "runs_active": [],
        }
    ]
    assert "job 'job_b': catch-up run 99" in reporter.lines
    assert status(emu, ids["job_b"]) == status(emu, ids["job_c"]) == "UNPAUSED"
