"""A chain A -> B -> C of daily jobs whose dependants have table-update triggers, for the
trigger pause and catch-up tests (importable by a child process: see ``hold_in_child``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from databricks_bundle_decorators import DailyBackfill, MonthlyBackfill, Registry, source, task
from databricks_bundle_decorators.bundle.table_graph import build_table_graph
from databricks_bundle_decorators.definitions.triggers import FileArrival, TableUpdate
from databricks_bundle_decorators.io_managers import SparkTableIoManager
from databricks_bundle_decorators.runtime.core.key_columns import backfill_key_column
from databricks_bundle_decorators.runtime.core.keys import get_written_keys

A_TABLE, B_TABLE, C_TABLE = "main.chain.a", "main.chain.b", "main.chain.c"
A_SRC = source(A_TABLE, event_time="ts")
B_SRC = source(B_TABLE, event_time="day_ts")
OTHER = source("main.other.x", event_time="ts")
A_DAILY = DailyBackfill("2024-01-01")
B_DAILY = DailyBackfill("2024-01-01", lookback=1)
registry = Registry()
FAIL: set[str] = set()  # jobs whose task fails while named here


def _b_rows(src: Any) -> Any:
    """B's rows of its written keys: per day, the sum of A's values, and when it was
    written (so a test sees which rows a commit rewrote)."""
    from pyspark.sql import functions as F

    keyed = src.read().withColumn("day", backfill_key_column("ts", B_DAILY))
    written = get_written_keys()
    return (
        keyed.where(F.col("day").isin(written))
        .groupBy("day")
        .agg(F.sum("v").alias("v"))
        .withColumn("day_ts", F.to_timestamp("day"))
        .withColumn("written_at", F.current_timestamp())
    )


@registry.job(name="job_a", backfill=A_DAILY)
def job_a() -> None:
    @task(name="t", io_manager=SparkTableIoManager(A_TABLE, partition_column="day"))
    def t() -> Any:
        raise NotImplementedError  # never run here: the tests write A themselves

    t()


@registry.job(name="job_b", backfill=B_DAILY, sources=[A_SRC], triggered_by=TableUpdate([A_SRC]))
def job_b() -> None:
    @task(name="t", io_manager=SparkTableIoManager(B_TABLE, partition_column="day"))
    def t() -> Any:
        if "job_b" in FAIL:
            raise RuntimeError("job_b fails on purpose")
        return _b_rows(A_SRC)

    t()


@registry.job(
    name="job_c", backfill=MonthlyBackfill("2024-01-01"), sources=[B_SRC],
    triggered_by=TableUpdate([B_SRC]),
)  # fmt: skip
def job_c() -> None:
    @task(name="t", io_manager=SparkTableIoManager(C_TABLE, partition_column="month"))
    def t() -> Any:
        raise NotImplementedError

    t()


@registry.job(
    name="job_files", backfill=A_DAILY, sources=[A_SRC],
    triggered_by=FileArrival("/Volumes/main/chain/landing/"),
)  # fmt: skip
def job_files() -> None:
    @task(name="t", io_manager=SparkTableIoManager("main.chain.files", partition_column="day"))
    def t() -> Any:
        raise NotImplementedError

    t()


@registry.job(
    name="job_other", backfill=A_DAILY, sources=[OTHER], triggered_by=TableUpdate([OTHER])
)
def job_other() -> None:
    @task(name="t", io_manager=SparkTableIoManager("main.other.y", partition_column="day"))
    def t() -> Any:
        raise NotImplementedError

    t()


GRAPH = build_table_graph(registry)
DEFINITIONS = {job.name: job for job in registry}
TRIGGERS = {
    "job_b": {"table_update": {"table_names": [A_TABLE]}},
    "job_c": {"table_update": {"table_names": [B_TABLE]}},
    "job_files": {"file_arrival": {"url": "/Volumes/main/chain/landing/"}},
    "job_other": {"table_update": {"table_names": ["main.other.x"]}},
}
"""The deployed triggers (``pause_status`` left out: UNPAUSED, as the API defaults)."""


def written_trigger(emu: Any, job_id: int) -> Any:
    """The ``trigger`` the last create/update/reset request that set one wrote to job
    ``job_id``, as sent: ``jobs/get`` never returns a table update's ``condition``
    (databricks/cli#6315), so what a pause wrote back is seen in the requests."""
    for _, body in reversed(emu.job_change_bodies(job_id)):
        settings = body.get("new_settings", body)
        if "trigger" in settings:
            return settings["trigger"]
    return None


def marker_path(root: Path, job: str, job_id: int) -> Path:
    """The local pause marker of ``job`` (the first, if several), or where a dead
    launcher's is written when there is none."""
    from databricks_bundle_decorators.launch.guard.pause.schedule_pause import local_markers

    folder = Path(local_markers(root, job, job_id, "").place.folder)
    found = sorted(folder.glob("*.json"))
    return found[0] if found else folder / "dead.json"


def hold_in_child(url: str, token: str, root: str, ids: str) -> None:
    """The launcher in a child process: hold the triggers, say so, then wait to be killed."""
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.config import Config

    from databricks_bundle_decorators.launch.guard.pause.trigger_pause import (
        hold_dependant_triggers,
    )

    client = WorkspaceClient(config=Config(host=url, token=token, auth_type="pat"))
    job_ids = dict(item.split("=") for item in ids.split(","))
    with hold_dependant_triggers(
        client, GRAPH, [A_TABLE, B_TABLE], definitions=DEFINITIONS, root=Path(root),
        job_id_of=lambda name: int(job_ids[name]),
    ):  # fmt: skip
        print("held", flush=True)
        sys.stdin.read()  # until the test kills this process
