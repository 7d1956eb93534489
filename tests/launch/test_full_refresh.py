"""``dbxdec backfill --full-refresh``: on real local Delta tables, a refresh stopped by a
failed slice leaves the tables at their old version, ``--resume`` continues the same
staging tables and swaps them in with one commit, and a reader polling during the swap
only ever counts the old table or the new one. On the Jobs API emulator, the swap run is
triggered only after every slice succeeded, with its order in ``dbxdec_order``."""

from __future__ import annotations

import io
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.backfill import DailyBackfill
from databricks_bundle_decorators.backfill.refresh import staging_table_part
from databricks_bundle_decorators.backfill.wire import (
    ORDER_PARAM,
    StageOrder,
    SwapOrder,
    decode_order,
    encode_order,
    order_in,
)
from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.definitions.loader import import_pipelines
from databricks_bundle_decorators.errors import UsageError
from databricks_bundle_decorators.launch.launcher import (
    BackfillRequest,
    Connection,
    Pacing,
    ResumeRequest,
    plan_backfill,
    run_backfill,
)
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.launch.plan.history import keys_of_parameters
from databricks_bundle_decorators.launch.plan.options import LaunchOptions
from databricks_bundle_decorators.launch.prepare.resume import prepare_resume
from databricks_bundle_decorators.launch.status.progress import JsonReporter
from databricks_bundle_decorators.runtime.job_tables.tables import (
    local_table_exists,
    local_table_path,
)
from databricks_bundle_decorators.runtime.running.local import JobRunResult, run_job_locally
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS
from .full_refresh_project import DAILY, MODULE, RAW, write_full_refresh_project
from .test_undo import Dbxdec
from .undo_project import table_history, table_rows

# also in the Spark Connect lane (tests/connect_lane.py)
pytestmark = pytest.mark.connect_lane


def staging_name(table: str, backfill_id: str) -> str:
    catalog, schema, name = table.split(".")
    return f"{catalog}.{schema}.{staging_table_part(name, backfill_id)}"


@pytest.fixture
def seeded(tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> Dbxdec:
    """A project whose tables hold 2024-01-01..04, two ``old`` rows a day (raw: 8 rows)."""
    cli = Dbxdec(write_full_refresh_project(tmp_path / "proj"), capsys)
    code, out, err = cli(
        "run", "fr_orders", "--local", "--start", "2024-01-01", "--end", "2024-01-04"
    )
    assert code == 0, out + err
    return cli


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.not_in_connect_lane("lane budget: the swap is the readers-during-the-swap test's")
def test_a_failed_full_refresh_leaves_the_tables_and_resume_swaps_them_in(
    seeded: Dbxdec, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, warehouse = seeded.root, seeded.root / ".dbxdec" / "warehouse"
    old = {name: table_rows(spark, root, name) for name in (RAW, DAILY)}
    old_history = {name: table_history(spark, root, name) for name in (RAW, DAILY)}
    assert len(old[RAW]) == 8 and old_history[RAW][-1][0] == 0  # one commit so far

    monkeypatch.setenv("FR_FAIL_KEY", "2024-01-03")
    code, out, err = seeded(
        "backfill", "fr_orders", "--local", "--poll-interval", "0.05", "--full-refresh",
        "--start", "2024-01-01", "--end", "2024-01-03",
        "--param", "label=new", "--param", "per_day=3",
    )  # fmt: skip
    assert code == 1, out + err
    (ledger,) = list_ledgers(root, "fr_orders")
    # failed keys are rerun into the staging tables by --resume, never by a plain rerun
    assert "Rerun the failed keys" not in out + err
    assert f"--resume {ledger.id}" in out + err
    assert [r.state for r in ledger.slices] == ["succeeded", "succeeded", "failed", "pending"]
    assert ledger.slices[-1].label == "full-refresh swap" and ledger.options.full_refresh
    assert [order_in(r.parameters) for r in ledger.slices] == [StageOrder(ledger.id)] * 3 + [
        SwapOrder(ledger.id)
    ]
    # the tables are untouched: same rows, same latest version
    for name in (RAW, DAILY):
        assert table_rows(spark, root, name) == old[name]
        assert table_history(spark, root, name) == old_history[name]
    # the staging tables hold the two slices that succeeded; daily read raw's staging
    staged = table_rows(spark, root, staging_name(RAW, ledger.id))
    assert sorted({(day, label) for day, label, _ in staged}) == [
        ("2024-01-01", "new"),
        ("2024-01-02", "new"),
    ]
    assert table_rows(spark, root, staging_name(DAILY, ledger.id)) == [
        ("2024-01-01", "new", 3),
        ("2024-01-02", "new", 3),
    ]

    monkeypatch.delenv("FR_FAIL_KEY")
    code, out, err = seeded("backfill", "--resume", ledger.id, "--poll-interval", "0.05")
    assert code == 0, out + err

    new_raw = table_rows(spark, root, RAW)
    assert len(new_raw) == 9 and {label for _, label, _ in new_raw} == {"new"}
    assert table_rows(spark, root, DAILY) == [(f"2024-01-0{d}", "new", 3) for d in (1, 2, 3)]
    (resumed,) = list_ledgers(root, "fr_orders")
    swap_run = resumed.slices[-1].attempts[-1].run_id
    for name, task in ((RAW, "raw"), (DAILY, "daily")):
        history = table_history(spark, root, name)
        # exactly one commit more: the swap, carrying the swap run's identity
        assert history[:-1] == old_history[name]
        assert history[-1][0] == old_history[name][-1][0] + 1
        assert history[-1][2] == f"dbxdec:fr_orders:{task}:refresh={ledger.id}:{swap_run}"
        assert not local_table_exists(staging_name(name, ledger.id), warehouse)

    # undo knows the swap commit as the backfill's: the old tables come back
    code, out, err = seeded("backfill", "undo", ledger.id, "--yes")
    assert code == 0, out + err
    for name in (RAW, DAILY):
        assert table_rows(spark, root, name) == old[name]


@pytest.mark.spark
def test_readers_see_the_old_table_or_the_new_one_during_the_swap(
    seeded: Dbxdec, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, warehouse = seeded.root, seeded.root / ".dbxdec" / "warehouse"
    registry: Registry = import_pipelines([MODULE], root=root)
    refresh = "fr-reader-test"
    params = {
        "backfill_start_key": "2024-01-01",
        "backfill_key": "2024-01-05",
        "label": "new",
        "per_day": "3",
    }
    staged = run_job_locally(
        registry,
        "fr_orders",
        params={**params, ORDER_PARAM: encode_order(StageOrder(refresh))},
        warehouse=warehouse,
        run_id="stage-1",
    )
    assert staged.succeeded
    old_history = table_history(spark, root, RAW)

    def swap(run_id: str) -> JobRunResult:
        params = {ORDER_PARAM: encode_order(SwapOrder(refresh))}
        return run_job_locally(
            registry, "fr_orders", params=params, warehouse=warehouse, run_id=run_id
        )

    # a check refusing the whole staging table: nothing is swapped, the staging is kept
    monkeypatch.setenv("FR_REFUSE", "refused by the test")
    refused = swap("swap-0")
    monkeypatch.delenv("FR_REFUSE")
    assert [(t.task_key, t.status) for t in refused.tasks] == [
        ("raw", "failed"),
        ("daily", "skipped"),
    ]
    assert (
        "frame_check" in refused.tasks[0].error and "refused by the test" in refused.tasks[0].error
    )
    assert table_history(spark, root, RAW) == old_history
    assert local_table_exists(staging_name(RAW, refresh), warehouse)
    path = str(local_table_path(RAW, warehouse))
    counts: list[int] = []
    first_read, swapped = threading.Event(), threading.Event()

    def reader() -> None:
        while True:
            done = swapped.is_set()  # read before counting: a count after it sees the swap
            counts.append(spark.read.format("delta").load(path).count())
            first_read.set()
            if done:
                return

    thread = threading.Thread(target=reader)
    thread.start()
    assert first_read.wait(timeout=120)
    swapped_in = swap("swap-1")
    swapped.set()
    thread.join(timeout=120)

    assert swapped_in.succeeded, [t.error for t in swapped_in.failed]
    print(f"reader counts: {len(counts)} reads, values {sorted(set(counts))}")
    assert set(counts) <= {8, 15} and counts[0] == 8 and counts[-1] == 15
    assert counts == sorted(counts)  # once the new table is seen, never the old one again
    # a retried swap run finds the swaps done and changes nothing
    again = swap("swap-2")
    assert again.succeeded, [t.error for t in again.failed]
    assert len(table_history(spark, root, RAW)) == len(old_history) + 1


def test_full_refresh_refuses_what_makes_no_sense_in_one_line(
    registry: Registry, root: Path
) -> None:
    local = Connection(local=True)
    cases = {
        "--full-refresh cannot be combined with --rerun failed: it rebuilds the tables from "
        "every key of the plan (the keys left out would be lost)": {
            "rerun": "failed",
            "options": LaunchOptions(full_refresh=True),
        },
        "--full-refresh cannot be combined with --final-sync: its last run is the swap": {
            "options": LaunchOptions(full_refresh=True, final_sync=True)
        },
        "catchup cannot --full-refresh: a full refresh rebuilds every key": {
            "catchup": True,
            "options": LaunchOptions(full_refresh=True),
        },
    }
    for message, kwargs in cases.items():
        request = BackfillRequest("nightly", connection=local, **kwargs)
        with pytest.raises(UsageError) as refused:
            plan_backfill(request, root=root, registry=registry, warehouse=root / "wh")
        assert str(refused.value) == message


def test_on_databricks_the_swap_run_starts_only_after_every_slice_succeeded(
    emu: JobsEmulator, root: Path, registry: Registry, tmp_path: Path
) -> None:
    client = emu.workspace_client()
    days = [f"2024-01-0{d}" for d in range(1, 6)]
    pacing = Pacing(max_concurrent=2, poll_interval=0.01)

    def refresh(job_id: int) -> BackfillRequest:
        connection = Connection(job_id=job_id)
        return BackfillRequest(
            "nightly", start=days[0], end=days[-1], pacing=pacing,
            options=LaunchOptions(full_refresh=True), connection=connection,
        )  # fmt: skip

    old_job = emu.create_job("nightly", parameters=BACKFILL_PARAMS, max_concurrent_runs=10)
    with pytest.raises(UsageError) as refused:
        plan_backfill(
            refresh(old_job), root=root, registry=registry, warehouse=tmp_path, client=client
        )
    assert str(refused.value) == (
        f"job 'nightly' (id {old_job}) was deployed without the dbxdec_order "
        "parameter (by an older dbxdec): deploy it again (dbxdec deploy) to --full-refresh; "
        "nothing was launched"
    )
    assert emu.runs(old_job) == []

    job_id = emu.create_job(
        "nightly", parameters={**BACKFILL_PARAMS, ORDER_PARAM: ""}, max_concurrent_runs=10
    )
    emu.set_outcome(days[2], result="FAILED", message="bad day")
    prepared = plan_backfill(
        refresh(job_id), root=root, registry=registry, warehouse=tmp_path, client=client
    )
    backfill_id = prepared.ledger.id
    summary = run_backfill(prepared, JsonReporter(io.StringIO()))
    assert summary.exit_code == 1
    runs = emu.runs(job_id)
    assert sorted(r.job_parameters["backfill_key"] for r in runs) == days
    assert {order_in(r.job_parameters) for r in runs} == {StageOrder(backfill_id)}
    # the first slice ran alone: it creates the staging tables
    assert runs[0].ended is not None and all(r.created > runs[0].ended for r in runs[1:])

    emu.set_outcome(days[2], result="SUCCESS")
    resumed = prepare_resume(
        ResumeRequest(backfill_id, pacing=pacing),
        root=root,
        project_loader=lambda: (None, registry),  # type: ignore[arg-type,return-value]
        client=client,
    )
    assert run_backfill(resumed, JsonReporter(io.StringIO())).exit_code == 0
    runs = emu.runs(job_id)
    swaps = [r for r in runs if isinstance(order_in(r.job_parameters), SwapOrder)]
    assert len(swaps) == 1 and order_in(swaps[0].job_parameters) == SwapOrder(backfill_id)
    assert swaps[0].job_parameters["backfill_key"] == ""
    slices = [r for r in runs if r.job_parameters["backfill_key"]]
    assert len(slices) == 6 and sorted({r.job_parameters["backfill_key"] for r in slices}) == days
    # the swap was created after the last slice ended, and is the last run
    assert swaps[0].created > max(r.ended or float("inf") for r in slices)
    assert swaps[0].run_id == runs[-1].run_id


def test_the_swap_run_writes_no_key_in_the_run_history() -> None:
    days = DailyBackfill(start_date="2024-01-01")
    started = datetime(2024, 3, 1, 12, tzinfo=timezone.utc).timestamp()
    refresh = "nightly-20240301T120000-1a2b"
    swap = {"backfill_key": "", ORDER_PARAM: encode_order(SwapOrder(refresh))}
    stage = {"backfill_key": "2024-01-02", ORDER_PARAM: encode_order(StageOrder(refresh))}
    assert keys_of_parameters(days, swap, started=started) == ()
    assert keys_of_parameters(days, stage, started=started) == ("2024-01-02",)
    assert keys_of_parameters(days, {"backfill_key": ""}, started=started) == ("2024-03-01",)


def test_a_full_refresh_order_is_checked_where_it_crosses_the_wire() -> None:
    order = StageOrder("sales-20240601T120000-1a2b")
    assert decode_order(f" {encode_order(order)} ") == order
    assert decode_order("") is None
    with pytest.raises(ValueError) as bad:
        decode_order("drop:sales; DROP TABLE x")
    assert str(bad.value) == (
        "job parameter dbxdec_order='drop:sales; DROP TABLE x' is not an order: not JSON"
    )
    with pytest.raises(ValueError):
        encode_order(SwapOrder("a`b"))
    # staging names: letters, digits and _, at most 255 characters, one per backfill
    long = staging_table_part("t" * 255, "sales-1")
    assert len(long) == 255 and long.endswith(staging_table_part("t", "sales-1")[1:])
    assert staging_table_part("t", "sales-1") != staging_table_part("t", "sales-2")
