"""``dbxdec catchup JOB --by data``: the keys whose data is missing or empty in the job's
output tables, read on the embedded Spark, or on Databricks by a run of the deployed job with
a :class:`~...backfill.wire.PresenceOrder` whose tasks print a report per table."""

from __future__ import annotations

import secrets
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...backfill.mapping import upstream_keys
from ...backfill.wire import (
    ORDER_PARAM,
    KeyRange,
    PresenceOrder,
    PresenceReport,
    encode_order,
)
from ...definitions import JobDefinition, Registry
from ...definitions.contracts import LazySession, RunEnvironment
from ...errors import DefinitionError, UsageError
from ...runtime.programs.presence import JobPresence, keyed_tables, read_presence
from ..backends.databricks_backend import one_line
from ..backends.errors import PresenceFailed, require_local_spark
from ..backends.measure_run import wait_for_run
from ..backends.task_output import task_reports
from ..prepare.planners import Draft, Planning
from ..workspace.workspace import request_refusals, require_order_parameter, workspace_errors

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

    from ..backends.backends import RunStatus

PRESENCE_TIMEOUT_SECONDS = 3600.0
"""How long a presence run may take, a cluster's start included, before it is cancelled."""


def _job_keys(job: JobDefinition, keys: Sequence[str], environment: RunEnvironment) -> list[str]:
    """``keys``, each checked to be ``job``'s, once ``job`` is known to write a keyed table."""
    if job.backfill is None:
        raise UsageError(f"job {job.name!r} has no backfill definition, so no keys to look for")
    for key in keys:
        try:
            job.backfill.validate_key(key)
        except ValueError as exc:
            raise UsageError(f"job {job.name!r}: {exc}") from None
    found, notes = keyed_tables(job, environment)
    if not found:
        why = f" ({'; '.join(notes)})" if notes else ""
        raise UsageError(
            f"job {job.name!r} writes no table partitioned by backfill key{why}, so its data "
            "cannot tell which keys are missing; use catchup by run history instead"
        )
    return list(keys)


def keys_missing_data_local(
    registry: Registry,
    job: JobDefinition | str,
    keys: Sequence[str],
    *,
    warehouse: Path,
    spark: Any = None,
) -> list[str]:
    """The ``keys`` (in their order) without rows in one of the job's local output tables
    (``warehouse``: the local tables' folder; ``spark``: default the embedded session).

    Raises:
        UsageError: unknown job, a job without backfill, a key not of the job, or a job
            that writes no partitioned table.
        EnvironmentProblem: PySpark or Delta Lake is missing.
    """
    definition = registry.get(job) if isinstance(job, str) else job
    wanted = _job_keys(definition, keys, RunEnvironment(None, warehouse, False))
    if not wanted:
        return []
    if spark is None:
        require_local_spark()
        from ...runtime.session.spark import local_spark_session

        session: Any = LazySession(local_spark_session)
    else:
        session = spark
    presence = read_presence(definition, wanted, RunEnvironment(session, warehouse, False))
    return presence.missing(wanted)


def keys_missing_data_databricks(
    client: WorkspaceClient,
    job_id: int,
    job_def: JobDefinition,
    keys: Sequence[str],
    *,
    timeout: float = PRESENCE_TIMEOUT_SECONDS,
    poll_interval: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """The ``keys`` (in their order) without rows in one of the deployed job's tables, read
    by a run of the job over their range, cancelled after ``timeout`` seconds of ``clock``.

    Raises:
        UsageError: a key not of the job, a job that writes no partitioned table, a
            deployed job without ``dbxdec_order``, or the workspace refused the run.
        PresenceFailed: the run failed, was cancelled, outlasted ``timeout``, or a table's
            report is missing.
        WorkspaceRejected, WorkspaceUnreachable: credentials refused, no answer.
    """
    wanted = _job_keys(job_def, keys, RunEnvironment(None, Path("."), True))
    if not wanted:
        return []
    assert job_def.backfill is not None  # _job_keys refuses a job without one
    ordered = job_def.backfill.sort_keys(wanted)
    order = PresenceOrder(KeyRange(ordered[0], ordered[-1]))
    with workspace_errors(client.config.host):
        purpose = "to find missing keys from the data, or catch up by run history"
        require_order_parameter(client, job_id, job_def.name, purpose=purpose)
        run_id, status = _run_and_wait(client, job_id, order, timeout, poll_interval, clock)
        page = f" ({status.url})" if status.url else ""
        if status.state != "succeeded":
            raise PresenceFailed(
                f"the presence run {run_id} of job {job_def.name!r} {status.state}: "
                f"{status.message or 'no message'}; each task's output says what it read{page}"
            )
        reports = _read_reports(client, run_id)
    presence = _job_presence(job_def, reports, run_id, page)
    return presence.missing(wanted)


def find_missing_data(draft: Draft, planning: Planning) -> Draft:
    """``catchup --by data``: only the keys whose partitions are missing or empty."""
    found = draft.found
    if not planning.by_data:
        return draft
    if found is None:
        require_local_spark()
        only = keys_missing_data_local(
            planning.registry, planning.job, draft.keys, warehouse=planning.warehouse
        )
    else:
        only = keys_missing_data_databricks(
            found.client,
            found.remote.job_id,
            planning.job,
            draft.keys,
            poll_interval=planning.request.pacing.poll_interval,
        )
    return replace(draft, only=frozenset(only))


def _run_and_wait(
    client: WorkspaceClient,
    job_id: int,
    order: PresenceOrder,
    timeout: float,
    poll_interval: float,
    clock: Callable[[], float],
) -> tuple[int, RunStatus]:
    deadline = clock() + timeout
    token = f"dbxdec-presence-{secrets.token_hex(16)}"  # a new run per question asked
    try:
        waiter = client.jobs.run_now(
            job_id,
            job_parameters={ORDER_PARAM: encode_order(order)},
            idempotency_token=token,
        )
        run_id = int(waiter.run_id)

        def late(status: RunStatus) -> Exception:
            return PresenceFailed(
                f"the presence run {run_id} did not end within {timeout:g} s; it was "
                f"cancelled{f' ({status.url})' if status.url else ''}"
            )

        return run_id, wait_for_run(client, run_id, poll_interval, (deadline, late), clock)[1]
    except request_refusals() as exc:  # transport and credential failures: workspace_errors
        raise UsageError(f"the workspace refused the presence run: {one_line(exc)}") from None


def _read_reports(client: WorkspaceClient, run_id: int) -> list[PresenceReport]:
    """Every report line in the output of every task of the run."""
    return task_reports(client, run_id, PresenceReport.from_lines, (PresenceFailed, "presence"))


def _job_presence(
    job: JobDefinition, reports: Sequence[PresenceReport], run_id: int, page: str
) -> JobPresence:
    """The reports of the job's partitioned tables; every one must have reported."""
    found, notes = keyed_tables(job, RunEnvironment(None, Path("."), True))
    by_table = {report.table: report for report in reports}
    unreported = [name for name in found if name not in by_table]
    if unreported:
        tasks = sorted({task for name in unreported for task in found[name].tasks})
        raise PresenceFailed(
            f"the presence run {run_id} of job {job.name!r} succeeded but reported nothing for "
            f"table {', '.join(unreported)} (task {', '.join(tasks)}); was the job deployed "
            f"by this dbxdec? (dbxdec deploy){page}"
        )
    return JobPresence(tuple(by_table[name] for name in found), tuple(notes))


MAX_SHOWN_KEYS = 5
"""Missing upstream keys named one by one in the refusal; beyond, a count and the range."""


def check_upstream(draft: Draft, planning: Planning) -> Draft:
    """A backfill whose upstream jobs (the table graph of ``dbxdec graph``) hold no data for
    keys its windows read is refused before anything launches: one line per upstream job
    with its missing keys and the command that fills them (and, with ``--downstream``, this
    job after them). "No data" is what ``catchup --by data`` reads (a job never run lacks
    every key). ``--allow-missing-upstream`` goes on; so does a dry run that could not
    reach the workspace.

    Raises:
        UsageError: upstream keys are missing (exit 2).
    """
    request, job = planning.request, planning.job
    if request.allow_missing_upstream or draft.unreached is not None or not job.sources:
        return draft  # a job that reads no source has no upstream: no other body is traced
    from ...bundle.table_graph import build_table_graph

    try:
        graph = build_table_graph(planning.registry)
    except DefinitionError:  # a cycle: no job is upstream of another (dbxdec graph says so)
        return draft
    edges = [e for e in graph.edges if e.downstream == job.name]
    edges = [e for e in edges if planning.registry.get(e.upstream).backfill is not None]
    if not edges:
        return draft
    keys = request.plan(job, draft.history, draft.only).keys
    lines: list[str] = []
    warnings = list(draft.warnings)
    for upstream in dict.fromkeys(e.upstream for e in edges):
        writer = planning.registry.get(upstream)
        assert writer.backfill is not None
        needed = {
            k
            for e in edges
            if e.upstream == upstream
            for key in keys
            for k in upstream_keys(e.keys, key)
        }
        wanted = writer.backfill.sort_keys(sorted(needed))
        try:
            missing = _missing_upstream(writer, wanted, draft, planning)
        except (UsageError, PresenceFailed) as exc:  # e.g. deployed without dbxdec_order
            warnings.append(f"upstream job {writer.name!r}: its data was not checked: {exc}")
            continue
        if missing:
            lines.append(_missing_line(writer.name, missing, len(wanted), planning))
    if lines:
        raise UsageError(
            f"job {job.name!r} reads tables its upstream jobs have no data for in the keys "
            "this backfill needs:\n  "
            + "\n  ".join(lines)
            + "\nfill them first, or pass --allow-missing-upstream to run on what is there"
        )
    return replace(draft, warnings=tuple(warnings))


def _missing_upstream(
    writer: JobDefinition, wanted: Sequence[str], draft: Draft, planning: Planning
) -> list[str]:
    """The ``wanted`` keys of ``writer`` without data, locally or in the workspace."""
    if not wanted:
        return []
    if draft.found is None:
        require_local_spark()
        return keys_missing_data_local(
            planning.registry, writer, wanted, warehouse=planning.warehouse
        )
    from ..guard.connection import connect_job

    try:
        connection = replace(planning.request.connection, job_id=None)  # the writer's own
        found = connect_job(writer, connection, planning.root, 1, draft.found.client)
    except UsageError:  # not deployed: it never ran, so it has no data
        return list(wanted)
    return keys_missing_data_databricks(
        found.client,
        found.remote.job_id,
        writer,
        wanted,
        poll_interval=planning.request.pacing.poll_interval,
    )


def _missing_line(upstream: str, missing: Sequence[str], of: int, planning: Planning) -> str:
    shown = ", ".join(missing[:MAX_SHOWN_KEYS])
    if len(missing) > MAX_SHOWN_KEYS:
        shown = f"{missing[0]} .. {missing[-1]}"
    where = list(planning.request.context_args)
    connection = planning.request.connection
    if connection.local:
        where.append("--local")
    elif connection.target:
        where += ["-t", connection.target]
    span = ["--start", missing[0], "--end", missing[-1]]
    fill = shlex.join(["dbxdec", "backfill", upstream, *span, *where, "--downstream"])
    return f"{upstream}: {len(missing)} of {of} keys have no data ({shown}): {fill}"
