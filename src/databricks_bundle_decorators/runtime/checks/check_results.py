"""The check results table (``@job(check_results="cat.schema.tbl")``, or the project's
``[tool.dbxdec] check_results``): every check's verdict per key.

A task that judged checks replaces the table's rows of its job, task and judged keys in
one Delta commit (``replaceWhere`` on ``job``, ``task`` and ``key``, values quoted), so
re-running a key replaces its rows. Columns: see :data:`RESULTS_SCHEMA` (``measured``
null when the check measures no number; ``severity`` null in rows written before the
column existed: a write adds it to an older table with ``mergeSchema``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime, timezone

from ...backfill.check_report import CheckReport, CheckResult
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ..core.errors import TaskRunError
from ..core.predicates import conjunction, equals_predicate, keys_predicate
from ..storage.delta import delta_table_exists
from ..storage.formats import TableRef
from ..storage.table_name import TableName
from .checking import collecting_check_results

RESULTS_SCHEMA = (
    "job STRING, task STRING, key STRING, check_name STRING, measured DOUBLE, "
    "check_limit STRING, passed BOOLEAN, detail STRING, run_id STRING, checked_at TIMESTAMP, "
    "severity STRING"
)
WRITE_ATTEMPTS = 5
"""Tries of one results write: a concurrent commit makes Delta refuse it (it is idempotent)."""
_CONFLICTS = ("Concurrent", "MetadataChanged", "ProtocolChanged", "FileAlreadyExists")


def results_ref(table: str, environment: RunEnvironment) -> TableRef:
    """The results table in the run's environment (raises ``ValueError`` for a bad name)."""
    return TableName.parse(table).ref(environment)


def results_predicate(job: str, task: str, keys: Sequence[str]) -> str:
    """The rows a write replaces: this job's and task's rows of ``keys``.

    Example:
        >>> results_predicate("sales", "clean", ["2024-01-01"])
        "(`job` = 'sales') AND (`task` = 'clean') AND (`key` IN ('2024-01-01'))"
    """
    predicate = conjunction(
        equals_predicate("job", job), equals_predicate("task", task), keys_predicate("key", keys)
    )
    assert predicate is not None
    return predicate


def write_check_results(
    job: str,
    task: str,
    results: Sequence[CheckResult],
    table: str,
    environment: RunEnvironment,
    *,
    now: datetime | None = None,
) -> int:
    """Replace the rows of ``job``/``task`` for the keys of ``results`` with them; the
    number of rows written.

    Raises:
        TaskRunError: Delta refused the write (conflicts: :data:`WRITE_ATTEMPTS` times).
    """
    if not results:
        return 0
    ref = results_ref(table, environment)
    spark = environment.spark
    at = (now or datetime.now(timezone.utc)).replace(tzinfo=None)  # a UTC TIMESTAMP
    rows = [
        (
            job,
            task,
            r.key,
            r.check,
            r.measured,
            r.limit,
            r.passed,
            r.detail,
            r.run_id,
            at,
            r.severity,
        )
        for r in results
    ]
    frame = spark.createDataFrame(rows, RESULTS_SCHEMA)
    keys = sorted({r.key for r in results})
    writer = (
        frame.write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", results_predicate(job, task, keys))
        # a table written before the severity column gains it (an added column is the
        # schema change mergeSchema allows on a write:
        # https://docs.databricks.com/aws/en/delta/update-schema)
        .option("mergeSchema", "true")
    )
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            if not delta_table_exists(spark, ref):
                writer = writer.partitionBy("job")
            if ref.path is not None:
                writer.save(str(ref.path))
            else:
                writer.saveAsTable(ref.qualified)
            return len(rows)
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            if attempt < WRITE_ATTEMPTS and any(word in text for word in _CONFLICTS):
                continue
            first = text.strip().splitlines()[0]
            raise TaskRunError(
                f"task {task!r}: cannot write check results to {ref.name}: {first}"
            ) from None
    raise AssertionError("unreachable")  # pragma: no cover


def print_check_report(
    results: Sequence[CheckResult], *, run: str = "", task: str = "", task_run_id: str = ""
) -> None:
    """Print the results as one report line for the launcher, named by the run, task and
    task run that judged them (so a log holding other tasks' output counts it once)."""
    if results:
        report = CheckReport(tuple(results), run=run, task=task, task_run_id=task_run_id)
        print(report.to_line(), flush=True)


@contextlib.contextmanager
def recording_check_results(
    job: JobDefinition, task: str, environment: RunEnvironment
) -> Iterator[list[CheckResult]]:
    """Collect the check results judged inside, stamped with the run id; when it ends
    (even by a failed check), print them as a report line in a job's task run and write
    them to the job's results table, if it names one.

    Raises:
        TaskRunError: the results could not be written (printed instead when the task
            failed already).
    """
    with collecting_check_results() as found:
        failed = False
        try:
            yield found
        except BaseException:
            failed = True
            raise
        finally:
            found[:] = [replace(r, run_id=environment.run_id) for r in found]
            if environment.databricks or environment.task_run_id:  # a job's task run
                print_check_report(
                    found,
                    run=environment.run_id,
                    task=task,
                    task_run_id=environment.task_run_id,
                )
            table = getattr(job, "check_results", None)
            if found and table:
                try:
                    write_check_results(job.name, task, found, table, environment)
                except TaskRunError as exc:
                    if not failed:
                        raise
                    print(f"dbxdec: {exc.render()}", file=sys.stderr, flush=True)
