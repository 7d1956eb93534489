"""The deadline monitor's run: fail when keys newly become overdue, read from the data.

A monitor job (``<job>__deadline_monitor``) runs :func:`run_monitor` on its schedule. A
due key is ``no data`` when it lacks rows in one of the job's partitioned output tables
(a failed, running or missing run alike), ``checks failed`` when the job's check results
table holds a failing result for it. ``DeadlineMonitor.state_table`` keeps the
``(job, key, reason)`` pairs seen: a run alerts (fails, listing them) only for new
pairs, after replacing the job's rows with the pairs overdue now in one Delta commit, so
an alert is sent at most once, and again if the write fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from whenever import Instant

from ...backfill.deadline import KeyDeadlines
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...errors import DbxdecError, UsageError, counted
from ..checks.check_results import results_ref
from ..core.predicates import conjunction, equals_predicate, keys_predicate
from ..programs.presence import read_presence
from ..storage.delta import delta_table_exists, read_delta

MonitorReason = Literal["no data", "checks failed"]
STATE_SCHEMA = "job STRING, key STRING, reason STRING, due TIMESTAMP, seen_at TIMESTAMP"
_SHOWN = 20


class NewOverdueKeys(DbxdecError):
    """Keys became overdue since the monitor's last run (exit 1; the monitor job's
    ``on_failure`` notifications carry the message)."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class LateKey:
    """A due key that the data shows is not there (or failed its checks: ``detail``
    names them); ``due`` is UTC."""

    key: str
    reason: MonitorReason
    due: datetime
    detail: str = ""


def _deadlines(job: JobDefinition) -> KeyDeadlines:
    if job.deadlines is None or job.deadlines.deadline.monitor is None:
        raise UsageError(
            f"job {job.name!r} has no deadline monitor: declare "
            "@job(deadline=Deadline(..., monitor=DeadlineMonitor(...)))"
        )
    return job.deadlines


def failing_checks(
    job: JobDefinition, keys: Sequence[str], environment: RunEnvironment
) -> dict[str, tuple[str, ...]]:
    """The failing checks per key in ``job``'s check results table (none without one)."""
    if not job.check_results or not keys:
        return {}
    ref = results_ref(job.check_results, environment)
    spark = environment.spark
    if not delta_table_exists(spark, ref):
        return {}
    predicate = conjunction(equals_predicate("job", job.name), keys_predicate("key", keys))
    rows = read_delta(spark, ref).where(predicate).where("NOT passed").collect()
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(str(row["key"]), set()).add(str(row["check_name"]))
    return {key: tuple(sorted(names)) for key, names in found.items()}


def late_keys(job: JobDefinition, environment: RunEnvironment, now: datetime) -> list[LateKey]:
    """The keys of ``job`` due before ``now`` that the data shows are late, in order.

    Raises:
        UsageError: the job has no deadline monitor.
    """
    deadlines = _deadlines(job)
    backfill = deadlines.backfill
    due = deadlines.due_keys(backfill.keys(now=now), Instant(now))
    if not due:
        return []
    missing = set(read_presence(job, due, environment).missing(due))
    failing = failing_checks(job, due, environment)
    late = []
    for key in due:
        when = deadlines.due(key).to_stdlib()
        if key in failing:
            late.append(LateKey(key, "checks failed", when, ", ".join(failing[key])))
        elif key in missing:
            late.append(LateKey(key, "no data", when))
    return late


def _seen(job: str, table: str, environment: RunEnvironment) -> dict[tuple[str, str], Any]:
    ref = results_ref(table, environment)
    spark = environment.spark
    if not delta_table_exists(spark, ref):
        return {}
    rows = read_delta(spark, ref).where(equals_predicate("job", job)).collect()
    return {(str(r["key"]), str(r["reason"])): r["seen_at"] for r in rows}


def _save(
    job: str,
    table: str,
    late: Sequence[LateKey],
    seen: Mapping[tuple[str, str], Any],
    environment: RunEnvironment,
    now: datetime,
) -> None:
    ref = results_ref(table, environment)
    spark = environment.spark

    def utc(at: datetime) -> datetime:  # TIMESTAMP values are UTC
        return at.astimezone(timezone.utc).replace(tzinfo=None)

    rows = [
        (job, k.key, k.reason, utc(k.due), seen.get((k.key, k.reason)) or utc(now)) for k in late
    ]
    writer = (
        spark.createDataFrame(rows, STATE_SCHEMA)
        .write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", equals_predicate("job", job))
    )
    if not delta_table_exists(spark, ref):
        writer = writer.partitionBy("job")
    if ref.path is not None:
        writer.save(str(ref.path))
    else:
        writer.saveAsTable(ref.qualified)


def alert_message(job: JobDefinition, new: Sequence[LateKey]) -> str:
    """``3 new overdue keys of sales: 2024-03-30 (no data, due 2024-03-31 09:00 CEST), ...``"""
    tz = _deadlines(job).tz
    parts = []
    for late in new[:_SHOWN]:
        due = Instant(late.due).to_tz(tz).to_stdlib().strftime("%Y-%m-%d %H:%M %Z")
        detail = f": {late.detail}" if late.detail else ""
        parts.append(f"{late.key} ({late.reason}{detail}, due {due})")
    more = f" and {len(new) - _SHOWN} more" if len(new) > _SHOWN else ""
    return f"{counted(len(new), 'new overdue key')} of {job.name}: {', '.join(parts)}{more}"


def run_monitor(job: JobDefinition, environment: RunEnvironment, now: datetime) -> list[LateKey]:
    """One monitor run at ``now``: the keys late now; raises when some are new.

    Raises:
        NewOverdueKeys: a key is late in a state not alerted before (the message lists
            every such key); the state table is saved first.
        UsageError: the job has no deadline monitor.
    """
    monitor = _deadlines(job).deadline.monitor
    assert monitor is not None
    late = late_keys(job, environment, now)
    seen = _seen(job.name, monitor.state_table, environment)
    new = [k for k in late if (k.key, k.reason) not in seen]
    if {(k.key, k.reason) for k in late} != set(seen):  # else the table says it already
        _save(job.name, monitor.state_table, late, seen, environment, now)
    if new:
        raise NewOverdueKeys(alert_message(job, new))
    return late
