"""Issue 30's chain on real local Delta, for the ``--downstream`` tests.

``ds_a`` (daily) writes ``main.ds.a_out``; ``ds_b`` (daily, lookback 1) reads it and
writes ``main.ds.b_out``; ``ds_c`` (monthly) reads that and writes ``main.ds.c_out``.
Each row carries the labels of the rows it was computed from, so a table's content
shows which run of its upstream it read. ``ds_a`` fails on the keys the file
``fail_on`` beside the module names, while it exists (a fix is deleting it). Every run
appends ``start JOB KEY`` to ``events.log`` beside the module when its task starts, ``end JOB KEY`` once its write has committed (``fail``
when it fails), in the order they happen (runs share the launcher's process).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MODULE = "downstream_test_pipelines"
A_OUT, B_OUT, C_OUT = "main.ds.a_out", "main.ds.b_out", "main.ds.c_out"

PIPELINES = '''
import threading
from pathlib import Path

from databricks_bundle_decorators import DailyBackfill, MonthlyBackfill, job, params, source, task
from databricks_bundle_decorators.io_managers import SparkTableIoManager, get_written_keys

LOG = Path(__file__).with_name("events.log")
FAIL_ON = Path(__file__).with_name("fail_on")  # keys ds_a fails on while the file exists
_LOCK = threading.Lock()
A_OUT, B_OUT, C_OUT = "main.ds.a_out", "main.ds.b_out", "main.ds.c_out"
SCHEMA = "day string, ts timestamp, labels string"


def _event(what, job):
    with _LOCK, LOG.open("a") as log:
        for key in get_written_keys():
            log.write(f"{what} {job} {key}\\n")


class _Logged(SparkTableIoManager):
    """Logs ``end JOB KEY`` once the run's write has committed."""

    job = ""

    def handle_output(self, context, obj):
        super().handle_output(context, obj)
        _event("end", self.job)


class ATable(_Logged):
    job = "ds_a"


class BTable(_Logged):
    job = "ds_b"


class CTable(_Logged):
    job = "ds_c"


def _spark():
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


@job(params={"label": "first"}, backfill=DailyBackfill("2024-01-01", "2024-03-31"))
def ds_a():
    @task(io_manager=ATable(A_OUT, partition_column="day"))
    def write_a():
        from datetime import datetime

        _event("start", "ds_a")
        keys = get_written_keys()
        failing = FAIL_ON.read_text().split() if FAIL_ON.exists() else []
        if set(failing) & set(keys):
            _event("fail", "ds_a")
            raise RuntimeError(f"ds_a fails on {failing} on purpose")
        rows = [(k, datetime.fromisoformat(k), f"{params['label']}@{k}") for k in keys]
        return _spark().createDataFrame(rows, SCHEMA)

    write_a()


@job(
    backfill=DailyBackfill("2024-01-01", "2024-03-31", lookback=1),
    sources=[source(A_OUT, event_time="ts")],
)
def ds_b():
    @task(io_manager=BTable(B_OUT, partition_column="day"))
    def write_b():
        from datetime import datetime, timedelta

        _event("start", "ds_b")
        rows = source(A_OUT, event_time="ts").read().collect()
        out = []
        for key in get_written_keys():
            day = datetime.fromisoformat(key)
            seen = sorted(r.labels for r in rows if day - timedelta(days=1) <= r.ts < day + timedelta(days=1))
            out.append((key, day, "+".join(seen) or "none"))
        return _spark().createDataFrame(out, SCHEMA)

    write_b()


@job(backfill=MonthlyBackfill("2024-01-01", "2024-03-01"), sources=[source(B_OUT, event_time="ts")])
def ds_c():
    @task(io_manager=CTable(C_OUT, partition_column="day"))
    def write_c():
        from datetime import datetime

        _event("start", "ds_c")
        rows = source(B_OUT, event_time="ts").read().collect()
        out = []
        for key in get_written_keys():
            month = key[:7]
            seen = sorted(r.labels for r in rows if r.day[:7] == month)
            out.append((key, datetime.fromisoformat(key), "|".join(seen) or "none"))
        return _spark().createDataFrame(out, SCHEMA)

    write_c()
'''


def write_downstream_project(root: Path, module: str = MODULE) -> Path:
    """A dbxdec project at ``root`` (tables under ``root/.dbxdec/warehouse``) whose
    pipelines module is ``module``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "dsproj"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["{module}"]\n'
    )
    (root / f"{module}.py").write_text(PIPELINES)
    return root


def events(root: Path) -> list[tuple[str, str, str]]:
    """``(start|end, job, key)`` in the order the runs logged them."""
    log = root / "events.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [tuple(line.split(" ")) for line in lines]  # type: ignore[misc]


def table_rows(spark: Any, root: Path, name: str) -> list[tuple[Any, ...]]:
    """Every row of local table ``name`` of the project, sorted."""
    from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path

    path = local_table_path(name, root / ".dbxdec" / "warehouse")
    return sorted(tuple(row) for row in spark.read.format("delta").load(str(path)).collect())


@contextmanager
def own_jobs() -> Iterator[None]:
    """The process-wide job registry emptied while the block runs, then put back.

    Several test modules write this chain under other module names; ``@job`` registers by
    name and keeps the first definition (a second one of the same name is a diagnostic),
    so a module that imports its own copy after another one would run the other copy's
    functions (and log to the other project's ``events.log``).
    """
    from databricks_bundle_decorators.definitions.registry import default_registry

    saved = dict(default_registry._jobs)
    default_registry._jobs.clear()
    try:
        yield
    finally:
        default_registry._jobs.clear()
        default_registry._jobs.update(saved)
