"""After a ``--downstream`` backfill, one catch-up run per table-triggered dependant over the
keys its sources changed since its watermark, minus those the backfill covered. A run the resumed
trigger starts finds the watermark moved ("Pause and resume job triggers",
https://docs.databricks.com/aws/en/jobs/triggers, is silent on whether resuming fires it). SQL:
``table_changes`` (https://docs.databricks.com/aws/en/sql/language-manual/functions/table_changes),
``unix_seconds`` (https://docs.databricks.com/aws/en/sql/language-manual/functions/unix_seconds)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ...backfill.changed_keys import Change, Coverage, uncovered_keys
from ...backfill.time_backfill import TimeBackfill
from ...backfill.wire import (
    BACKFILL_RUN_TIME_PARAM,
    ORDER_PARAM,
    TaskOrder,
    encode_order,
    run_time_param,
)
from ...backfill.wire.trigger import (
    TRIGGER_TABLES_PARAM,
    TRIGGER_VERSIONS_PARAM,
    encode_versions,
)
from ...definitions import JobDefinition
from ...definitions.triggers import TableUpdate
from ...runtime.core.predicates import quote_identifier, quote_literal
from ...runtime.storage.table_name import TableName
from ...runtime.triggers.trigger_state import (
    COVERED,
    STATE_COLUMNS,
    advance_value,
    latest_advance_of,
)
from ..workspace.first_watermark import Statements, WatermarkUnreadable
from ..workspace.workspace import workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

_BUCKET_SECONDS = 900
"""Change rows are read per 15 minutes of event time: every zone's UTC offset is a whole
number of quarter hours (IANA tz database), so no key boundary falls inside a bucket.
"""


@dataclass(frozen=True, slots=True)
class CatchUpRun:
    """What the catch-up did for one dependant: the keys of its run (empty: all covered), the
    run (``None``: none), the versions its watermark moved to, and a line for people.
    """

    job: str
    keys: tuple[str, ...]
    run_id: int | None
    versions: Mapping[str, int]
    line: str


def catch_up_dependants(
    client: WorkspaceClient,
    warehouse_id: str,
    jobs: Iterable[str],
    *,
    definitions: Mapping[str, JobDefinition],
    job_id_of: Callable[[str], int],
    backfill_id: str,
    now: datetime | None = None,
    poll_interval: float = 1.0,
) -> list[CatchUpRun]:
    """Launch each table-triggered job of ``jobs`` once over the keys it owes (module
    docstring), after the backfill and before the triggers are restored. A job whose
    catch-up cannot be worked out is left as it is, with a line saying why.

    Raises:
        WorkspaceRejected, WorkspaceUnreachable: the workspace refused or did not answer.
    """
    at = now if now is not None else datetime.now(timezone.utc)
    statements = Statements(client, warehouse_id, poll_interval)
    done: list[CatchUpRun] = []
    for name in dict.fromkeys(jobs):
        job = definitions[name]
        trigger, backfill = job.trigger, job.backfill
        if not isinstance(trigger, TableUpdate) or not isinstance(backfill, TimeBackfill):
            continue
        try:
            owed = _owed(statements, job, trigger, backfill, at)
        except WatermarkUnreadable as err:
            line = f"job {name!r}: no catch-up ({err.render()}); its next triggered run does it"
            done.append(CatchUpRun(name, (), None, {}, line))
            continue
        if isinstance(owed, str):
            done.append(CatchUpRun(name, (), None, {}, owed))
            continue
        keys, versions = owed
        if not keys:
            line = f"job {name!r}: the backfill covered every key its trigger would run"
            done.append(CatchUpRun(name, (), None, versions, line))
            continue
        run_id = _launch(client, job_id_of(name), keys, versions, trigger, at, backfill_id, name)
        line = f"job {name!r}: catch-up run {run_id} over the {len(keys)} uncovered keys"
        done.append(CatchUpRun(name, keys, run_id, versions, line))
    return done


def _owed(
    statements: Statements,
    job: JobDefinition,
    trigger: TableUpdate,
    backfill: TimeBackfill,
    at: datetime,
) -> tuple[tuple[str, ...], dict[str, int]] | str:
    """The keys ``job`` owes and the versions they were worked out at (its ``advance`` row
    written), or the line saying why nothing can be worked out.
    """
    state = TableName.parse(trigger.state_table).quoted
    statements.rows(f"CREATE TABLE IF NOT EXISTS {state} ({STATE_COLUMNS}) USING DELTA")
    rows = statements.rows(
        f"SELECT kind, value FROM {state} WHERE job = :job AND kind IN ('advance', :covered)",
        {"job": job.name, "covered": COVERED},
    )
    advances = [str(v) for k, v in rows if k == "advance" and v is not None]
    latest = latest_advance_of(advances)
    if latest is None:
        return (
            f"job {job.name!r}: no catch-up: no watermark is recorded yet (dbxdec deploy "
            "--warehouse-id W records it); its first triggered run needs --from-version N"
        )
    coverages = [_coverage(str(v)) for k, v in rows if k == COVERED and v is not None]
    versions = dict(latest.versions)
    changes: list[Change] = []
    for source in trigger.sources:
        newest = statements.latest_version(source.name)
        after = latest.versions.get(source.name)
        if after is None:
            return f"job {job.name!r}: no catch-up: no watermark of source {source.name} yet"
        if newest > after:
            assert source.event_time is not None  # TableUpdate checks it at definition
            changes += _changes(statements, source.name, source.event_time, after, newest)
        versions[source.name] = max(newest, after)
    current = backfill.current_key(now=at)
    keys = uncovered_keys(
        backfill,
        [_keyed(c, backfill) for c in changes],
        coverages,
        pending=latest.pending,
        watermark=latest.versions,
        current=current,
    )
    statements.rows(
        f"INSERT INTO {state} VALUES (:job, :run, 'advance', '', :value)",
        {
            "job": job.name,
            "run": "catch-up",
            "value": advance_value(versions, keys, len(advances) + 1),
        },
    )
    return tuple(keys), versions


def _changes(
    statements: Statements, table: str, column: str, after: int, newest: int
) -> list[Change]:
    """The changes of ``table``'s versions ``after+1..newest``, one per version and quarter
    hour of event time (``Change.key``: the bucket's epoch seconds).
    """
    name = quote_literal(TableName.parse(table).quoted)
    bucket = f"unix_seconds(CAST({quote_identifier(column)} AS TIMESTAMP)) DIV {_BUCKET_SECONDS}"
    try:
        rows = statements.rows(
            f"SELECT DISTINCT _commit_version, {bucket} FROM table_changes({name}, "
            f"{int(after) + 1}, {int(newest)})"
        )
    except WatermarkUnreadable as err:
        raise WatermarkUnreadable(
            f"the change data feed of {table} over versions {after + 1}..{newest} could not "
            f"be read ({err.render()}); enable it: table property "
            f"delta.enableChangeDataFeed = true on {table}"
        ) from None
    return [
        Change(table, int(v), str(int(b) * _BUCKET_SECONDS))
        for v, b in rows
        if v is not None and b is not None
    ]


def _keyed(change: Change, backfill: TimeBackfill) -> Change:
    at = datetime.fromtimestamp(int(change.key), tz=timezone.utc)
    return Change(change.source, change.version, backfill.key_of(at))


def _coverage(value: str) -> Coverage:
    data = json.loads(value)
    return Coverage(
        frozenset(str(k) for k in data["keys"]),
        {str(s): int(v) for s, v in data["versions"].items()},
    )


def _launch(
    client: WorkspaceClient,
    job_id: int,
    keys: tuple[str, ...],
    versions: Mapping[str, int],
    trigger: TableUpdate,
    at: datetime,
    backfill_id: str,
    job: str,
) -> int:
    """Start the catch-up run; the idempotency token (Jobs API ``run-now``, at most 64
    characters, https://docs.databricks.com/api/workspace/jobs/runnow) makes a second call
    for the same backfill and job return the same run.
    """
    params = {
        ORDER_PARAM: encode_order(TaskOrder(keys=keys)),
        TRIGGER_VERSIONS_PARAM: encode_versions(versions, {}),
        TRIGGER_TABLES_PARAM: json.dumps(sorted(trigger.table_names)),
        BACKFILL_RUN_TIME_PARAM: run_time_param(at),
    }
    digest = hashlib.sha256(f"{backfill_id}\0{job}".encode()).hexdigest()[:40]
    with workspace_errors(client.config.host):
        waiter = client.jobs.run_now(
            job_id, job_parameters=params, idempotency_token=f"dbxdec-catchup-{digest}"
        )
    return int(waiter.run_id)
