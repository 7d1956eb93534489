"""``--batch-size auto`` while a backfill runs: the untried slices are re-batched as run
durations arrive, and the choice is kept in the ledger for ``--resume``."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.launcher import (
    BackfillRequest,
    Pacing,
    ResumeRequest,
    plan_backfill,
    run_backfill,
)
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    load_ledger,
    rerun_command,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice
from databricks_bundle_decorators.launch.plan.request import Connection
from databricks_bundle_decorators.launch.prepare.rebatch import Rebatcher
from databricks_bundle_decorators.launch.prepare.resume import prepare_resume
from databricks_bundle_decorators.launch.status.progress import JsonReporter
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS

DAILY = DailyBackfill(start_date="2024-01-01", end_date="2024-12-31")
DAYS = [f"2024-01-{d:02d}" for d in range(1, 21)]
NIGHTLY_PARAMS = {**BACKFILL_PARAMS, "source": "x"}


def ledger_of(
    root: Path, *, order: str = "forward", canary: int = 0, target: float = 25.0
) -> Ledger:
    """Ten one-key slices of DAYS[:10] and a final sync; slices 0 and 1 took 10 s each,
    slice 2 is running."""
    keys = DAYS[:10] if order == "forward" else DAYS[:10][::-1]
    slices = (*(Slice(i, (k,)) for i, k in enumerate(keys)), Slice(10, ()))
    plan = BackfillPlan("nightly", slices, params={"source": "y"})
    options = LaunchOptions(
        max_concurrent=1, order=order, canary=canary, batch_auto=True, target_run_seconds=target
    )
    ledger = Ledger.create(root, plan, backend=BackendSpec("local"), options=options)
    for index in (0, 1):
        done = Attempt(1, f"t{index}", "succeeded", started_at=100.0, ended_at=110.0)
        ledger.update(ledger.slices[index].with_attempt(done))
    ledger.update(ledger.slices[2].with_attempt(Attempt(1, "t2", "running")))
    return ledger


def test_untried_slices_are_regrouped_and_the_final_sync_moves_last(tmp_path: Path) -> None:
    ledger = ledger_of(tmp_path)
    before = ledger.slices[:3]

    # two 1-key runs of 10 s: 2.5 s start-up (the share) + 7.5 s a key; 25 s fit 3 keys
    found = Rebatcher(DAILY, job="nightly").rechoose(ledger, list(range(3, 10)), 10, 1)

    assert found is not None and found.choice.size == 3
    assert [s.keys for s in ledger.slices[3:-1]] == [
        tuple(DAYS[3:6]),
        tuple(DAYS[6:9]),
        (DAYS[9],),
    ]
    assert ledger.slices[:3] == before  # launched slices are untouched
    assert [s.index for s in ledger.slices] == list(range(7))
    assert ledger.slices[-1].keys == () and found.final == 6
    assert found.queue == (3, 4, 5)
    assert ledger.slices[3].parameters == {
        "source": "y",
        "backfill_key": DAYS[5],
        "backfill_start_key": DAYS[3],
        "backfill_exact": "false",
    }
    assert ledger.slices[5].parameters["backfill_start_key"] == ""
    assert ledger.options.batch_size == 3
    assert "batch size auto: 1 -> 3 keys per run for the 7 keys not launched yet" in found.message

    ledger.save()
    assert [s.keys for s in load_ledger(tmp_path, ledger.id).slices] == [
        s.keys for s in ledger.slices
    ]


def test_nothing_changes_without_a_new_measurement(tmp_path: Path) -> None:
    ledger = ledger_of(tmp_path)
    rebatcher = Rebatcher(DAILY, job="nightly")
    assert rebatcher.rechoose(ledger, list(range(3, 10)), 10, 1) is not None
    assert rebatcher.rechoose(ledger, [3, 4, 5], 6, 1) is None  # same two runs measured


def test_a_small_change_of_size_is_ignored(tmp_path: Path) -> None:
    ledger = ledger_of(tmp_path, target=100.0)  # 12 keys would fit: capped at 7 keys // 1
    ledger.options = replace(ledger.options, batch_size=8)
    assert Rebatcher(DAILY, job="nightly").rechoose(ledger, list(range(3, 10)), 10, 1) is None
    ledger.options = replace(ledger.options, batch_size=10)
    found = Rebatcher(DAILY, job="nightly").rechoose(ledger, list(range(3, 10)), 10, 1)
    assert found is not None and found.choice.size == 7


def test_reverse_order_and_canaries_are_kept(tmp_path: Path) -> None:
    ledger = ledger_of(tmp_path, order="reverse", canary=4)

    found = Rebatcher(DAILY, job="nightly").rechoose(ledger, list(range(3, 10)), 10, 1)

    assert found is not None
    assert ledger.slices[3].keys == (DAYS[6],)  # the fourth slice is a canary: kept alone
    assert [s.keys for s in ledger.slices[4:-1]] == [tuple(DAYS[3:6]), tuple(DAYS[0:3])]


def test_auto_backfill_re_chooses_as_runs_end_and_resume_keeps_auto(
    emu: JobsEmulator, root: Path, registry: Registry
) -> None:
    client = emu.workspace_client()
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.set_outcome(DAYS[0], result="FAILED", message="bad day")
    request = BackfillRequest(
        "nightly",
        start=DAYS[0],
        end=DAYS[-1],
        batch_size="auto",
        options=LaunchOptions(target_run_seconds=1.0),
        connection=Connection(job_id=job_id),
        pacing=Pacing(max_concurrent=1, halt_on_error=True, poll_interval=0.01),
    )

    prepared = plan_backfill(request, root=root, registry=registry, warehouse=root, client=client)
    assert prepared.batch_choice is not None and prepared.batch_choice.size == 1  # no history
    assert run_backfill(prepared, JsonReporter(io.StringIO())).exit_code == 1
    assert [r.job_parameters["backfill_key"] for r in emu.runs(job_id)] == [DAYS[0]]
    ledger = load_ledger(root, prepared.ledger.id)
    assert ledger.options.batch_auto
    assert "--batch-size auto --target-run-length 1s" in rerun_command(ledger, [DAYS[0]])

    emu.set_outcome(DAYS[0], result="SUCCESS")
    resumed = prepare_resume(
        ResumeRequest(prepared.ledger.id, pacing=Pacing(max_concurrent=2, poll_interval=0.01)),
        root=root,
        project_loader=lambda: (None, registry),  # type: ignore[arg-type,return-value]
        client=client,
    )
    assert resumed.rebatcher is not None
    events = io.StringIO()
    assert run_backfill(resumed, JsonReporter(events)).exit_code == 0

    ranges = [
        (r.job_parameters.get("backfill_start_key") or r.job_parameters["backfill_key"],
         r.job_parameters["backfill_key"])
        for r in emu.runs(job_id)[1:]
    ]  # fmt: skip
    written = sorted(day for first, last in ranges for day in DAYS if first <= day <= last)
    assert written == DAYS  # every key once after the failed first run
    assert max(DAYS.index(last) - DAYS.index(first) + 1 for first, last in ranges) > 1
    messages = [json.loads(line).get("message", "") for line in events.getvalue().splitlines()]
    assert any(m.startswith("batch size auto: 1 -> ") for m in messages)
    assert load_ledger(root, prepared.ledger.id).options.batch_auto
