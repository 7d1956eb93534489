"""``dbxdec backfill undo ID`` of a ``--downstream`` backfill on Databricks: one undo run
per job, each sent that job's own order, dependants first, after every table of every
job was judged from the launcher through the emulated Statement Execution API.

Real: the backfill (launcher, per-job backend, Jobs API emulator over HTTP), the
WorkspaceClient, the tables' histories (real local Delta read by ``DESCRIBE HISTORY``
through the emulated warehouse) and undo's rules. Stand-in: the runs, simulated by the
emulator, so each table's commits are written here with the ``userMetadata`` a run of
that job writes (``dbxdec:<job>:<task>:<run id>-0:backfill=<id>``,
:mod:`databricks_bundle_decorators.runtime.programs.undo`).
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import DailyBackfill, MonthlyBackfill, Registry, source, task
from databricks_bundle_decorators.backfill.wire import (
    BACKFILL_PARAM_DEFAULTS,
    ORDER_PARAM,
    UndoOrder,
    decode_order,
    encode_order,
)
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.launch.launcher import plan_backfill, run_backfill
from databricks_bundle_decorators.launch.ledger.ledger import Ledger, load_ledger
from databricks_bundle_decorators.launch.operations.undo import (
    UNCHECKED,
    DownstreamUndo,
    prepare_undo,
)
from databricks_bundle_decorators.launch.plan.options import Pacing
from databricks_bundle_decorators.launch.plan.request import BackfillRequest, Connection
from databricks_bundle_decorators.launch.status.progress import JsonReporter
from databricks_bundle_decorators.runtime.programs.undo import UndoRefused
from databricks_bundle_decorators.runtime.storage.table_name import TableName
from databricks_bundle_decorators.testing import JobsEmulator

pytestmark = pytest.mark.spark

TABLES = {"u_a": "main.undo_ds.a", "u_b": "main.undo_ds.b", "u_c": "main.undo_ds.c"}
registry = Registry()


def _writer(job: str) -> None:
    """The job body: one task ``t`` writing the job's table (never run: the emulator
    simulates the runs)."""

    @task(name="t", io_manager=SparkTableIoManager(TABLES[job], partition_column="day"))
    def t() -> Any:
        raise NotImplementedError

    t()


@registry.job(name="u_a", backfill=DailyBackfill("2024-01-01"))
def u_a() -> None:
    _writer("u_a")


@registry.job(
    name="u_b", backfill=DailyBackfill("2024-01-01", lookback=1),
    sources=[source(TABLES["u_a"], event_time="ts")],
)  # fmt: skip
def u_b() -> None:
    _writer("u_b")


@registry.job(
    name="u_c", backfill=MonthlyBackfill("2024-01-01"),
    sources=[source(TABLES["u_b"], event_time="ts")],
)  # fmt: skip
def u_c() -> None:
    _writer("u_c")


def _commit(spark: Any, warehouse: Path, table: str, metadata: str | None) -> None:
    frame = spark.createDataFrame([("2024-01-02",)], "day string")
    writer = frame.write.format("delta").mode("append")
    if metadata is not None:
        writer = writer.option("userMetadata", metadata)
    writer.save(str(TableName.parse(table).local_path(warehouse)))


def backfill_then_tables(
    emu: JobsEmulator, spark: Any, root: Path, warehouse: Path
) -> tuple[Ledger, dict[str, int], dict[str, list[str]]]:
    """A ``--downstream`` backfill of u_a over two days on the emulator, then each
    table: a commit by another writer before it, and one by a run of its job."""
    ids = {name: emu.create_job(name, parameters=BACKFILL_PARAM_DEFAULTS) for name in TABLES}
    request = BackfillRequest(
        job="u_a", start="2024-01-02", end="2024-01-03", downstream=True,
        connection=Connection(), pacing=Pacing(max_concurrent=4, poll_interval=0.01),
    )  # fmt: skip
    client = emu.workspace_client()
    prepared = plan_backfill(
        request, root=root, registry=registry, warehouse=warehouse, client=client
    )
    prepared.options = replace(prepared.options, max_poll_interval=0.05)
    assert run_backfill(prepared, JsonReporter(io.StringIO())).exit_code == 0
    return prepared.ledger, ids, commit_tables(spark, warehouse, prepared.ledger)


def commit_tables(spark: Any, warehouse: Path, ledger: Ledger) -> dict[str, list[str]]:
    """Each table: a commit by another writer, then one by a run of its job; each job's
    run ids."""
    run_ids: dict[str, list[str]] = {name: [] for name in TABLES}
    for record in ledger.slices:
        run_ids[record.job or ledger.job] += [a.run_id for a in record.attempts if a.run_id]
    for name, table in TABLES.items():
        _commit(spark, warehouse, table, None)  # version 0: not the backfill's
        last = max(run_ids[name])  # one commit per table is enough: any run of its job
        _commit(spark, warehouse, table, f"dbxdec:{name}:t:{last}-0:backfill={ledger.id}")
    return {name: sorted(runs) for name, runs in run_ids.items()}


def undo_of(emu: JobsEmulator, root: Path, backfill_id: str, warehouse: str | None) -> Any:
    return prepare_undo(
        backfill_id, root=root, project_loader=lambda: (None, registry),  # type: ignore[arg-type,return-value]
        client=emu.workspace_client(), warehouse_id=warehouse, poll_interval=0.01,
    )  # fmt: skip


@pytest.fixture
def warehouse(emu: JobsEmulator, spark: Any, tmp_path: Path) -> Path:
    folder = tmp_path / "warehouse"
    emu.statements.add_warehouse("wh")
    emu.statements.map_tables(spark, folder)
    return folder


def test_each_job_is_undone_by_its_own_run_dependants_first(
    emu: JobsEmulator, spark: Any, tmp_path: Path, warehouse: Path
) -> None:
    ledger, ids, run_ids = backfill_then_tables(emu, spark, tmp_path, warehouse)
    assert {name: len(runs) for name, runs in run_ids.items()} == {"u_a": 2, "u_b": 3, "u_c": 1}
    launched = len(emu.run_now_bodies())

    undo = undo_of(emu, tmp_path, ledger.id, "wh")
    assert isinstance(undo, DownstreamUndo) and undo.refused() is None and undo.count == 3
    text = "\n".join(undo.lines())
    for table in TABLES.values():  # judged from each table's history
        assert f"{table}: restore version 1 to version 0 (undoes 1 commit of this" in text
    undo.apply()

    bodies = emu.run_now_bodies()[launched:]
    assert [b["job_id"] for b in bodies] == [ids["u_c"], ids["u_b"], ids["u_a"]]
    for body in bodies:  # by the backfill's id: each job's run restores its own commits
        assert body["job_parameters"] == {"dbxdec_order": encode_order(UndoOrder(ledger.id))}

    # a ledger from before the backfill's id: each job's run is sent that job's run ids
    old = load_ledger(tmp_path, ledger.id)
    for record in old.slices:
        params = {k: v for k, v in record.parameters.items() if k != ORDER_PARAM}
        old.update(replace(record, parameters=params))
    old.save()
    launched = len(emu.run_now_bodies())
    undo = undo_of(emu, tmp_path, ledger.id, "wh")
    assert undo.refused() is None and undo.count == 3
    undo.apply()
    bodies = emu.run_now_bodies()[launched:]
    assert {b["job_id"]: decode_order(b["job_parameters"]["dbxdec_order"]) for b in bodies} == {
        ids[name]: UndoOrder(ledger.id, tuple(run_ids[name])) for name in TABLES
    }


def test_a_detached_downstream_backfill_is_undone_from_its_journal(
    emu: JobsEmulator, spark: Any, tmp_path: Path, warehouse: Path
) -> None:
    """No ledger on this machine: undo reads the backfill's journal in the workspace (its
    controller run, a subprocess, ran every job) and undoes each job by its own run."""
    from databricks_bundle_decorators.launch.control.detach import detach_backfill
    from databricks_bundle_decorators.launch.ledger.journal import read_journal
    from databricks_bundle_decorators.launch.ledger.ledger import ledger_dir
    from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

    from .controller_fixtures import controller_job

    ids = {name: emu.create_job(name, parameters=BACKFILL_PARAM_DEFAULTS) for name in TABLES}
    ctl = controller_job(emu)
    processes_of(emu).extra_env = {"DBXDEC_CLAIMS_DIR": "/Shared/dbxdec/claims"}
    request = BackfillRequest(
        job="u_a", start="2024-01-02", end="2024-01-03", downstream=True,
        connection=Connection(), pacing=Pacing(max_concurrent=4),
    )  # fmt: skip
    client = emu.workspace_client()
    prepared = plan_backfill(
        request, root=tmp_path, registry=registry, warehouse=warehouse, client=client
    )
    backfill_id = detach_backfill(prepared, root=tmp_path).backfill_id
    emu.wait_for(
        lambda runs: bool(runs) and not any(r.active for r in runs),
        job_id=ctl,
        what="the controller run ended",
    )
    ledger = read_journal(client, ids["u_a"], backfill_id)
    assert ledger.state == "succeeded"
    assert not list(ledger_dir(tmp_path).glob("*.sqlite"))  # no ledger on this machine
    commit_tables(spark, warehouse, ledger)
    launched = len(emu.run_now_bodies())

    undo = undo_of(emu, tmp_path, backfill_id, "wh")
    assert isinstance(undo, DownstreamUndo) and undo.refused() is None and undo.count == 3
    undo.apply()
    bodies = emu.run_now_bodies()[launched:]
    assert [b["job_id"] for b in bodies] == [ids["u_c"], ids["u_b"], ids["u_a"]]
    for body in bodies:
        assert body["job_parameters"] == {"dbxdec_order": encode_order(UndoOrder(backfill_id))}


def test_one_table_needing_force_refuses_the_whole_undo_before_any_run(
    emu: JobsEmulator, spark: Any, tmp_path: Path, warehouse: Path
) -> None:
    ledger, ids, _ = backfill_then_tables(emu, spark, tmp_path, warehouse)
    _commit(spark, warehouse, TABLES["u_b"], "dbxdec:someone:else:1-0")  # after the backfill
    launched = len(emu.run_now_bodies())

    undo = undo_of(emu, tmp_path, ledger.id, "wh")
    refused = undo.refused()
    assert isinstance(refused, UndoRefused)
    assert str(refused).startswith(
        f"table {TABLES['u_b']}: version 2 (WRITE at "
    ) and "by 'dbxdec:someone:else:1-0') was committed by another writer" in str(refused)
    assert "\n" not in str(refused)
    assert [line.split(":")[0] for line in undo.refusals()] == [f"table {TABLES['u_b']}"]
    with pytest.raises(UndoRefused):
        undo.apply()
    assert emu.run_now_bodies()[launched:] == []  # not u_c's run either

    # no warehouse to check through: one line, nothing launched; --force goes without it
    unchecked = undo_of(emu, tmp_path, ledger.id, None)
    assert str(unchecked.refused()) == UNCHECKED
    with pytest.raises(UndoRefused):
        unchecked.apply()
    assert emu.run_now_bodies()[launched:] == []
    unchecked.apply(force=True)
    bodies = emu.run_now_bodies()[launched:]
    assert [b["job_id"] for b in bodies] == [ids["u_c"], ids["u_b"], ids["u_a"]]
    assert all(_order(b).force for b in bodies)


def test_a_history_read_through_the_warehouse_is_the_table_s_and_a_missing_table_has_none(
    emu: JobsEmulator, spark: Any, warehouse: Path
) -> None:
    from databricks_bundle_decorators.launch.workspace.first_watermark import (
        Statements,
        read_history,
    )
    from databricks_bundle_decorators.runtime.storage.formats import TableRef

    _commit(spark, warehouse, TABLES["u_a"], None)
    _commit(spark, warehouse, TABLES["u_a"], "dbxdec:u_a:t:7-0:backfill=x")
    statements = Statements(emu.workspace_client(), "wh", 0.01, "reading a table's history")

    def ref(name: str) -> TableRef:
        return TableRef(name, TableName.parse(name).quoted)

    commits = read_history(statements, ref(TABLES["u_a"]))
    assert [(c.version, c.operation, c.metadata) for c in commits] == [
        (0, "WRITE", None),
        (1, "WRITE", "dbxdec:u_a:t:7-0:backfill=x"),
    ]
    assert all(c.at.endswith("Z") and len(c.at) == 20 for c in commits)
    assert read_history(statements, ref("main.undo_ds.never_written")) == ()


def _order(body: dict[str, Any]) -> UndoOrder:
    order = decode_order(body["job_parameters"]["dbxdec_order"])
    assert isinstance(order, UndoOrder)
    return order
