"""A local backfill of an upserting job (``write="upsert"``) on a real Delta table: two
keys upserted side by side (``--max-concurrent 2``) both commit, each key keeps the
rows its run did not produce, and ``dbxdec backfill undo`` restores the rows before."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.runtime.storage import delta, upsert
from databricks_bundle_decorators.runtime.storage.table_name import split_metadata

from .undo_project import table_history, table_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MODULE = "upsert_test_pipelines"
ORDERS = "main.upsert.orders"
PIPELINES = """
from databricks_bundle_decorators import DailyBackfill, job, params, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

orders_io = SparkTableIoManager(
    "main.upsert.orders", partition_column="day", write="upsert", upsert_on=["order_id"]
)


@job(
    params={"label": "first", "orders": "0"},
    backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-12-31"),
)
def upsert_orders():
    @task(io_manager=orders_io)
    def write_orders():
        from pyspark.sql import SparkSession

        numbers = [int(n) for n in params["orders"].split(",")]
        rows = [(f"{k}#{n}", k, params["label"]) for k in get_written_keys() for n in numbers]
        return SparkSession.builder.getOrCreate().createDataFrame(
            rows, "order_id string, day string, label string"
        )

    write_orders()
"""


def dbxdec(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``dbxdec ARGS --project ROOT`` in-process; it must succeed; returns stdout."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--project", str(root)])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, out + err
    return out


def test_two_keys_upserted_side_by_side_both_commit_and_undo_restores(
    tmp_path: Path,
    spark: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "upsertproj"\nversion = "0.1"\n\n'
        f'[tool.dbxdec]\npipelines = ["{MODULE}"]\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    days = ("--start", "2024-01-01", "--end", "2024-01-04")
    dbxdec(root, capsys, "run", "upsert_orders", "--local", *days, "--param", "orders=0,1")
    before = table_rows(spark, root, ORDERS)

    # Both runs must have read the table and staged their rows before either commits:
    # each waits for the other at the commit (an event, not a sleep; a run that never
    # comes breaks the barrier and fails its slice).
    both_staged = threading.Barrier(2, timeout=120)
    read_versions: list[int] = []
    commit = delta._DeltaStagedWrite.commit
    latest: Callable[..., int | None] = upsert.table_version

    def recorded_version(*args: Any) -> int | None:
        version = latest(*args)
        assert version is not None
        read_versions.append(version)
        return version

    def commit_together(self: Any, request: Any) -> None:
        both_staged.wait()
        commit(self, request)

    monkeypatch.setattr(upsert, "table_version", recorded_version)
    monkeypatch.setattr(delta._DeltaStagedWrite, "commit", commit_together)
    out = dbxdec(
        root,
        capsys,
        "backfill",
        "upsert_orders",
        "--local",
        "--start",
        "2024-01-02",
        "--end",
        "2024-01-03",
        "--max-concurrent",
        "2",
        "--poll-interval",
        "0.05",
        "--param",
        "label=second",
        "--param",
        "orders=1,2",
    )
    monkeypatch.undo()
    assert read_versions == [0, 0], out  # both upserts read version 0, neither saw the other
    (ledger,) = list_ledgers(root, "upsert_orders")
    history = table_history(spark, root, ORDERS)
    assert [(v, op) for v, op, _ in history] == [(0, "WRITE"), (1, "WRITE"), (2, "WRITE")]
    assert [split_metadata(m or "")[1] for *_, m in history[1:]] == [ledger.id, ledger.id]

    during = table_rows(spark, root, ORDERS)
    upserted_days = {"2024-01-02", "2024-01-03"}
    assert [r for r in during if r[1] not in upserted_days] == [
        r for r in before if r[1] not in upserted_days
    ]
    for day in sorted(upserted_days):  # 0 kept, 1 updated, 2 inserted
        assert [r for r in during if r[1] == day] == [
            (f"{day}#0", day, "first"),
            (f"{day}#1", day, "second"),
            (f"{day}#2", day, "second"),
        ]

    dbxdec(root, capsys, "backfill", "undo", ledger.id, "--yes")
    assert table_rows(spark, root, ORDERS) == before
