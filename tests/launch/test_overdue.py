"""``dbxdec status --overdue``: every reason a key is overdue, from the emulated workspace's
run history and the local ledgers, on a fixed clock; a backfill of an older key leaves a
newer overdue key overdue."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from databricks_bundle_decorators import DailyBackfill, Deadline, Registry, task
from databricks_bundle_decorators.backfill.check_report import CheckResult
from databricks_bundle_decorators.backfill.wire import BACKFILL_PARAM_DEFAULTS
from databricks_bundle_decorators.definitions import JobDefinition
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.launcher import (
    BackfillRequest,
    Pacing,
    plan_backfill,
    run_backfill,
)
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    list_ledgers,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.plan.request import Connection
from databricks_bundle_decorators.launch.status.overdue import failed_checks, overdue_keys
from databricks_bundle_decorators.launch.status.progress import JsonReporter
from databricks_bundle_decorators.launch.status.status import JobStatus, job_status
from databricks_bundle_decorators.launch.status.status_grid import PageOrigin
from databricks_bundle_decorators.testing import JobsEmulator

AMS = "Europe/Amsterdam"
NOW = datetime(2024, 4, 1, 7, 0, tzinfo=timezone.utc)  # 09:00 in Amsterdam (+02)


def _registry() -> Registry:
    registry = Registry()

    @task
    def load() -> None: ...

    @registry.job(
        backfill=DailyBackfill("2024-03-25", "2024-04-05", tz=AMS), deadline=Deadline("09:00")
    )
    def late() -> None:
        load()

    @registry.job(backfill=DailyBackfill("2024-03-25", "2024-04-05", tz=AMS))
    def relaxed() -> None:
        load()

    return registry


def _run(emu: JobsEmulator, job_id: int, key: str) -> None:
    emu.workspace_client().jobs.run_now(job_id, job_parameters={"backfill_key": key})


def _ledger_with_failed_checks(root: Path, job_id: int, key: str) -> None:
    """A backfill ledger whose run of ``key`` failed on a check (its report kept)."""
    plan = BackfillPlan("late", (Slice(0, (key,)),))
    ledger = Ledger.create(root, plan, backend=BackendSpec("databricks", job_id),
                           options=LaunchOptions())  # fmt: skip
    result = CheckResult("min_row_count(100)", key, 3.0, ">= 100", False, "load", "900")
    attempt = Attempt(1, "t", "failed", "900", submitted_at=NOW.timestamp() - 3600,
                      error="check failed", checks=(result.to_json(),))  # fmt: skip
    ledger.update(ledger.slices[0].with_attempt(attempt))
    ledger.save()
    ledger.close()


def _overdue(
    emu: JobsEmulator, job: JobDefinition, root: Path, job_id: int
) -> dict[str, tuple[str, str]]:
    status = job_status(
        job, Connection(job_id=job_id), root=root, now=NOW, client=emu.workspace_client()
    )
    found = overdue_keys(job, status, now=NOW, checks=failed_checks(list_ledgers(root, "late")))
    return {k.key: (k.reason, k.detail) for k in found}


def test_each_state_has_its_reason_and_an_old_backfill_clears_no_newer_key(
    emu: JobsEmulator, tmp_path: Path
) -> None:
    registry = _registry()
    job = registry.get("late")
    job_id = emu.create_job("late", parameters=BACKFILL_PARAM_DEFAULTS, max_concurrent_runs=10)
    emu.set_outcome("2024-03-26", result="FAILED", message="boom")
    emu.set_outcome("2024-03-27", result="CANCELED")
    emu.set_outcome("2024-03-28", hold=True)
    for key in ("2024-03-25", "2024-03-26", "2024-03-27", "2024-03-28"):
        _run(emu, job_id, key)
    emu.wait_for(
        lambda runs: sum(r.ended is not None for r in runs) == 3, job_id=job_id, what="3 ends"
    )
    _ledger_with_failed_checks(tmp_path, job_id, "2024-03-29")

    # 2024-03-31 is due at 2024-04-01 09:00 Amsterdam: NOW, so not yet overdue. A run
    # started elsewhere has no details (status_grid): its error is not repeated here.
    assert _overdue(emu, job, tmp_path, job_id) == {
        "2024-03-26": ("run failed", ""),
        "2024-03-27": ("run failed", "cancelled"),
        "2024-03-28": ("still running", ""),
        "2024-03-29": ("checks failed", "min_row_count(100)"),
        "2024-03-30": ("no run", ""),
    }

    emu.release()
    emu.set_outcome("2024-03-26", result="SUCCESS")
    request = BackfillRequest(
        "late",
        start="2024-03-26",
        end="2024-03-26",
        connection=Connection(job_id=job_id),
        pacing=Pacing(max_concurrent=1, poll_interval=0.01),
    )
    client = emu.workspace_client()
    prepared = plan_backfill(request, root=tmp_path, registry=registry, warehouse=tmp_path,
                             client=client)  # fmt: skip
    assert run_backfill(prepared, JsonReporter(io.StringIO())).exit_code == 0
    after = _overdue(emu, job, tmp_path, job_id)
    assert "2024-03-26" not in after and "2024-03-28" not in after  # succeeded, released
    assert after["2024-03-30"] == ("no run", "")  # the backfill of an older key: still late
    assert after["2024-03-29"] == ("checks failed", "min_row_count(100)")


def test_a_job_without_a_deadline_is_one_clear_error(emu: JobsEmulator, tmp_path: Path) -> None:
    job = _registry().get("relaxed")
    job_id = emu.create_job("relaxed", parameters=BACKFILL_PARAM_DEFAULTS)
    status = job_status(
        job, Connection(job_id=job_id), root=tmp_path, now=NOW, client=emu.workspace_client()
    )
    with pytest.raises(UsageError, match=r"job 'relaxed' has no deadline: declare @job\(dead"):
        overdue_keys(job, status, now=NOW)


def test_overdue_json_names_due_time_and_reason(emu: JobsEmulator, tmp_path: Path) -> None:
    job = _registry().get("late")
    job_id = emu.create_job("late", parameters=BACKFILL_PARAM_DEFAULTS)
    status = job_status(
        job, Connection(job_id=job_id), root=tmp_path, now=NOW, client=emu.workspace_client()
    )
    (first, *_) = overdue_keys(job, status, now=NOW, start="2024-03-30")
    assert json.loads(json.dumps(first.to_json())) == {
        "key": "2024-03-30",
        "due": "2024-03-31T07:00:00+00:00",
        "state": "missing",
        "reason": "no run",
        "detail": "",
        "run_id": "",
    }


def test_a_key_older_than_the_run_history_is_overdue_as_unknown() -> None:
    """Without a record, a key whose window ended before the workspace's 60-day run
    history is ``unknown`` (it may have run), not ``no run``."""
    job = _registry().get("late")
    horizon = datetime(2024, 3, 28, tzinfo=timezone.utc)
    status = JobStatus({"2024-03-26": "succeeded"}, {}, PageOrigin(NOW, "test"), horizon)
    found = overdue_keys(job, status, now=NOW, end="2024-03-29")
    assert [(k.key, k.reason) for k in found] == [
        ("2024-03-25", "unknown"),
        ("2024-03-27", "unknown"),  # ended 2024-03-27 23:00Z, before the horizon
        ("2024-03-28", "no run"),
        ("2024-03-29", "no run"),
    ]
