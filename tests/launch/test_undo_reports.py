"""The versions an undo run's tasks report (``undo`` report lines in their logs) are read
back through ``runs/get-output`` and recorded in the backfill's ledger (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.backfill.wire import report_line
from databricks_bundle_decorators.launch.backends.errors import UndoFailed
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    read_ledger,
)
from databricks_bundle_decorators.launch.operations.undo import _undo_reports, job_runs
from databricks_bundle_decorators.testing import JobsEmulator


def report(table: str, version: int) -> str:
    return report_line("undo", {"table": table, "version": version})


def undo_run(emu: JobsEmulator) -> tuple[int, tuple[int, ...]]:
    settings = {"tasks": [{"task_key": "a"}, {"task_key": "b"}]}
    job_id = emu.create_job("orders", parameters={"dbxdec_order": ""}, settings=settings)
    client = emu.workspace_client()
    run_id = int(client.jobs.run_now(job_id, job_parameters={"dbxdec_order": "x"}).run_id)
    emu.wait_until_idle()
    (run,) = emu.runs(job_id)
    return run_id, run.task_run_ids


def test_each_reported_commit_is_read_once(emu: JobsEmulator) -> None:
    run_id, (a, b) = undo_run(emu)
    emu.set_task_logs(a, f"undo of backfill x: ...\n{report('main.s.t', 7)}\n")
    # serverless task logs may hold other tasks' lines: the same commit counts once
    emu.set_task_logs(b, f"{report('main.s.t', 7)}\n{report('main.s.u', 3)}\n")
    assert _undo_reports(emu.workspace_client(), run_id) == [("main.s.t", 7), ("main.s.u", 3)]


def test_a_malformed_report_fails_in_one_line(emu: JobsEmulator) -> None:
    run_id, (a, _) = undo_run(emu)
    emu.set_task_logs(a, report_line("undo", {"table": "t"}) + "\n")
    with pytest.raises(UndoFailed, match=r"^task 'a' of undo run \d+: 'version'$"):
        _undo_reports(emu.workspace_client(), run_id)


def test_recorded_versions_are_in_the_ledger_and_in_its_runs(tmp_path: Path) -> None:
    ledger = Ledger(
        tmp_path / "orders-1.sqlite",
        backfill_id="orders-1",
        job="orders",
        backend=BackendSpec("local"),
        options=LaunchOptions(),
        slices=[],
    )
    assert ledger.undone == frozenset()
    ledger.save()
    ledger.record_undone("main.s.t", 7)
    ledger.record_undone("main.s.u", 3)
    assert read_ledger(ledger.path).undone == {("main.s.t", 7), ("main.s.u", 3)}
    assert job_runs(ledger, ledger.job).undone == {("main.s.t", 7), ("main.s.u", 3)}
    ledger.save()  # a later save of the ledger keeps them
    assert read_ledger(ledger.path).undone == {("main.s.t", 7), ("main.s.u", 3)}
