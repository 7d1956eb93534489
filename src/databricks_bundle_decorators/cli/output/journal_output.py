"""What ``dbxdec status`` and ``dbxdec backfills`` print: a backfill whose ledger is a
local file or a journal in the workspace (``--backfill ID``, ``--workspace``), and the
overdue keys (``--overdue``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from whenever import Instant

from ...definitions import JobDefinition
from ...errors import UsageError, counted, did_you_mean
from ...launch.ledger.journal import JournalSummary
from ...launch.ledger.ledger import (
    Ledger,
    backfill_ids,
    job_part,
    label_of_jobs,
    ledger_dir,
    load_ledger,
)
from ...launch.plan.request import Connection
from ...launch.run.blocking import jobs_label, ledger_jobs
from ...launch.status.journal_status import (
    JournalView,
    key_bounds,
    locate_journal,
    read_view,
    summary_line,
)
from ...launch.status.overdue import OverdueKey
from ...launch.status.status import ledger_status, partition_grid
from ...launch.status.status_view import terminal_table
from ...launch.steer.steering import driving_line


def backfill_ledger(
    backfill_id: str, job: str, connection: Connection, root: Path
) -> tuple[Ledger, str, JournalView | None]:
    """The ledger of backfill ``backfill_id`` of ``job``: the local file when this
    project has it, else (not ``--local``) its journal in the workspace; with where it
    was read and, for a journal, the reading.

    Raises:
        UsageError: no such backfill here (and ``--local``), or no journal of it.
    """
    local = backfill_ids(ledger_dir(root))
    if backfill_id in local:
        ledger = _job_part(load_ledger(root, backfill_id), job)
        return ledger, f"local ledger in {ledger_dir(root)}", None
    if connection.local:
        hint = did_you_mean(backfill_id, sorted(local))
        raise UsageError(
            f"no backfill {backfill_id!r} in {ledger_dir(root)}.{hint} Without --local, "
            "the journal of a detached backfill is read from the workspace"
        )
    # the journal is under the job the id names: a --downstream backfill's dependants
    # have none of their own
    place = locate_journal(backfill_id, connection, root)
    view = read_view(place)
    where = f"workspace journal of job {place.remote_name} (job id {place.job_id})"
    return _job_part(view.ledger, job), where, view


def _job_part(ledger: Ledger, job: str) -> Ledger:
    """``ledger``, or the part of a ``--downstream`` backfill that ran ``job``."""
    jobs = ledger_jobs(ledger)
    if job not in jobs:
        raise UsageError(f"backfill {ledger.id} is of job {jobs_label(ledger)}, not {job}")
    return job_part(ledger, job)


def echo_backfill_status(
    definition: JobDefinition,
    backfill_id: str,
    connection: Connection,
    root: Path,
    *,
    start: str | None,
    end: str | None,
    as_json: bool,
    now: datetime,
) -> None:
    """The status grid of one backfill's keys (by default from its first key to its
    last), from its ledger or journal, and a line of counts."""
    ledger, where, view = backfill_ledger(backfill_id, definition.name, connection, root)
    status = ledger_status([ledger], now=now, where=where)
    if definition.backfill is not None and start is None and end is None:
        start, end = key_bounds(definition.backfill, ledger)
    grid, _ = partition_grid(definition, status, start=start, end=end)
    line = summary_line(view) if view is not None else f"backfill {ledger.id}: {ledger.state}"
    if as_json:
        document = {
            "job": definition.name,
            "backfill": ledger.id,
            "where": where,
            "state": ledger.state,
            "control": view.control if view is not None else None,
            "counts": ledger.counts(),
            "states": dict(grid.states),
        }
        click.echo(json.dumps(document))
        return
    console = Console()
    console.print(terminal_table(grid, console))
    click.echo(f"{line} ({where})")
    if view is not None and view.place is not None:
        undriven = driving_line(view.place, ledger.state, view.control)
        if undriven is not None:
            click.echo(undriven)


def backfill_row(found: Ledger | JournalSummary) -> dict[str, Any]:
    """The ``dbxdec backfills`` row of a local ledger or a workspace journal (its
    steering beside its state)."""
    jobs: Sequence[str]
    counts: Mapping[str, int]
    if isinstance(found, Ledger):
        id_, jobs, backend, where = found.id, ledger_jobs(found), found.backend.kind, "local"
        counts, runs, state = found.counts(), len(found.slices), str(found.state)
        state = "undone" if found.undone else state  # its tables are back where they were
    else:
        id_, jobs, backend, where = found.backfill_id, found.jobs, "databricks", "workspace"
        counts, runs = found.counts, sum(found.counts.values())
        state = f"{found.state}{'' if found.control == 'running' else f' ({found.control})'}"
    return {
        "id": id_,
        "job": label_of_jobs(jobs),
        "jobs": list(jobs),
        "backend": backend,
        "state": state,
        "runs": runs,
        "succeeded": counts.get("succeeded", 0),
        "failed": counts.get("failed", 0),
        "created_at": found.created_at,
        "where": where,
        **({"because": found.because} if isinstance(found, Ledger) and found.because else {}),
    }


def _rule(job: JobDefinition) -> str:
    """``09:00 Europe/Amsterdam`` or ``2:00:00 after the window``."""
    deadlines = job.deadlines
    assert deadlines is not None
    deadline = deadlines.deadline
    if deadline.at is not None:
        return f"{deadline.at} {deadlines.tz}"
    return f"{deadline.after} after the window"


def echo_overdue(
    job: JobDefinition, overdue: Sequence[OverdueKey], *, now: datetime, as_json: bool
) -> None:
    """Print the overdue keys of ``job`` at ``now`` (each due time in the deadline's zone)."""
    if as_json:
        body = {
            "job": job.name,
            "now": now.isoformat(),
            "overdue": [key.to_json() for key in overdue],
        }
        click.echo(json.dumps(body))
        return
    if not overdue:
        click.echo(f"No overdue keys of {job.name} (deadline {_rule(job)}).")
        return
    assert job.deadlines is not None
    tz = job.deadlines.tz
    click.echo(f"{counted(len(overdue), 'overdue key')} of {job.name} (deadline {_rule(job)}):")
    width = max(len(key.key) for key in overdue)
    for key in overdue:
        due = Instant(key.due).to_tz(tz).to_stdlib().strftime("%Y-%m-%d %H:%M %Z")
        line = f"  {key.key:<{width}}  due {due}  {key.reason}"
        if key.detail:
            line += f": {key.detail.splitlines()[0][:200]}"
        click.echo(line)
