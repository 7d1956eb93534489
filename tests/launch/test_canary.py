"""Canary slices (``--canary N``): the scheduler against the Jobs API emulator through the
real WorkspaceClient."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.backends.databricks_backend import DatabricksBackend
from databricks_bundle_decorators.launch.ledger.ledger import (
    BackendSpec,
    LaunchOptions,
    Ledger,
    read_ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.plan.states import BackfillState
from databricks_bundle_decorators.launch.policy.canary import canary_failure, canary_failure_line
from databricks_bundle_decorators.launch.run.events import LaunchEvent
from databricks_bundle_decorators.launch.run.scheduler import Scheduler
from databricks_bundle_decorators.testing import JobsEmulator, RunRecord

from .conftest import BACKFILL_PARAMS, keys_of

DAYS = [f"2024-01-{d:02d}" for d in range(1, 9)]


def make_ledger(root: Path, *, canary: int, final_sync: bool = False) -> Ledger:
    slices = [Slice(i, (key,)) for i, key in enumerate(DAYS)]
    if final_sync:
        slices.append(Slice(len(slices), ()))
    options = LaunchOptions(max_concurrent=4, retries=1, retry_delay=0.01, canary=canary)
    plan = BackfillPlan("nightly", tuple(slices))
    return Ledger.create(root, plan, backend=BackendSpec("databricks", 1), options=options)


def run(emu: JobsEmulator, ledger: Ledger, job_id: int) -> BackfillState:
    options = replace(ledger.options, poll_interval=0.01)
    backend = DatabricksBackend(emu.workspace_client(), job_id)
    events: list[LaunchEvent] = []
    return Scheduler(backend, ledger, options, emit=events.append).run()


def runs_of(emu: JobsEmulator, job_id: int, *keys: str) -> list[RunRecord]:
    return [r for r in emu.runs(job_id) if r.job_parameters["backfill_key"] in keys]


def assert_rest_after_canaries(emu: JobsEmulator, job_id: int, canaries: list[str]) -> None:
    canary_runs = runs_of(emu, job_id, *canaries)
    rest = [r for r in emu.runs(job_id) if r not in canary_runs]
    last_canary_end = max(r.ended for r in canary_runs if r.ended is not None)
    assert rest and all(r.created > last_canary_end for r in rest)


def test_a_failed_canary_launches_nothing_else(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    emu.set_outcome(DAYS[1], result="FAILED", message="bad schema")
    ledger = make_ledger(tmp_path, canary=2, final_sync=True)

    assert run(emu, ledger, job_id) == "failed"

    # the two canaries (the failing one with its retry) and nothing else
    assert sorted(keys_of(emu, job_id)) == [DAYS[0], DAYS[1], DAYS[1]]
    saved = read_ledger(ledger.path)
    assert [r.state for r in saved.slices] == ["succeeded", "failed"] + ["pending"] * 7
    assert saved.state == "failed" and saved.options.canary == 2
    failed = canary_failure(saved)
    assert failed is not None and failed.label == DAYS[1]
    assert canary_failure_line(failed, f"dbxdec backfill --resume {saved.id}") == (
        f"canary slice {DAYS[1]} failed: FAILED: bad schema; nothing else launched; "
        f"fix and rerun, or dbxdec backfill --resume {saved.id}"
    )


def test_resume_runs_the_failed_canary_first(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    emu.set_outcome(DAYS[1], result="FAILED", message="bad schema")
    assert run(emu, make_ledger(tmp_path, canary=2), job_id) == "failed"
    first_session = len(emu.runs(job_id))
    emu.set_outcome(DAYS[1], result="SUCCESS")

    resumed = read_ledger(next(tmp_path.glob(".dbxdec/backfills/*.sqlite")))
    assert run(emu, resumed, job_id) == "succeeded"

    later = emu.runs(job_id)[first_session:]
    assert sorted(keys_of(emu, job_id)[first_session:]) == DAYS[1:]  # 01-01 not run again
    canary = next(r for r in later if r.job_parameters["backfill_key"] == DAYS[1])
    assert canary.ended is not None
    assert all(r.created > canary.ended for r in later if r is not canary)


def test_the_rest_launch_only_after_both_canaries_ended(emu: JobsEmulator, tmp_path: Path) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    emu.set_outcome(DAYS[1], hold=True)  # the second canary outlives the first
    ledger = make_ledger(tmp_path, canary=2)

    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(run, emu, ledger, job_id)
        try:
            emu.wait_for(
                lambda runs: any(r.ended is not None for r in runs),
                job_id=job_id,
                what="the first canary ended",
            )
            emu.release(DAYS[1])
        finally:
            emu.release()
        assert future.result(timeout=120) == "succeeded"

    assert sorted(keys_of(emu, job_id)) == DAYS  # each key once
    assert_rest_after_canaries(emu, job_id, DAYS[:2])


@pytest.mark.parametrize("canary", [0, 8, 20], ids=["off", "all", "more-than-slices"])
def test_no_gate_to_wait_for(emu: JobsEmulator, tmp_path: Path, canary: int) -> None:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)

    assert run(emu, make_ledger(tmp_path, canary=canary), job_id) == "succeeded"

    assert sorted(keys_of(emu, job_id)) == DAYS


def test_the_ledger_keeps_the_canary(tmp_path: Path) -> None:
    ledger = make_ledger(tmp_path, canary=3)
    ledger.save()
    assert read_ledger(ledger.path).options.canary == 3
