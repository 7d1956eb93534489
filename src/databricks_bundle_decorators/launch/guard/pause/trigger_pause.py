"""No trigger storms: pause the data triggers of a backfill's dependants while it writes
(a ``TableUpdate`` watching a table it writes, a ``FileArrival`` over a location it
writes; docs/triggered-jobs.md), only the ``trigger`` setting, through
:class:`.schedule_pause.Pause` and its markers. A detached backfill's pauses are held by
the backfill itself (:class:`...ledger.marker.RunHolder`), held again by every controller
generation and released by the last: start the controller run before the hold or right
after it. Local and detached markers do not see each other: the first to end may restore
a trigger the other wants paused; nothing is left paused for good.

Platform facts: ``trigger.pause_status`` is changed with ``jobs/update``
(databricks-sdk-py ``jobs.TriggerSettings``; https://docs.databricks.com/api/workspace/jobs/update);
"When you pause a trigger, any currently active runs continue, but the trigger no longer
starts new runs" (https://docs.databricks.com/aws/en/jobs/triggers).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....bundle.table_graph import TableGraph, table_key
from ....bundle.triggers import declared_trigger
from ....definitions import JobDefinition
from ....definitions.triggers import FileArrival, TableUpdate
from ....errors import UsageError
from ...ledger.marker import RunHolder, workspace_markers
from .schedule_pause import Pause, SchedulePause, restore_stale, restore_stale_pauses

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

OPTION = "--downstream"
BACKFILL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # it names a marker file


@dataclass(frozen=True, slots=True)
class DependantTrigger:
    """A job whose trigger would fire on the backfill's writes, and the written tables
    (or locations) it watches."""

    job: str
    watched: tuple[str, ...]


def dependant_triggers(
    graph: TableGraph,
    definitions: Mapping[str, JobDefinition],
    written: Iterable[str],
    locations: Iterable[str] = (),
) -> list[DependantTrigger]:
    """The jobs of ``graph`` whose trigger watches a table in ``written`` (or a location
    in ``locations``), in the graph's job order.

    Example: with ``B`` declared ``triggered_by=TableUpdate([source("main.s.a", ...)])``,
    ``dependant_triggers(graph, defs, ["main.s.a"])`` is
    ``[DependantTrigger("B", ("main.s.a",))]``.
    """
    tables = {table_key(t) for t in written}
    paths = [_folder(p) for p in locations]
    found: list[DependantTrigger] = []
    for name in graph.jobs:
        definition = definitions.get(name)
        if definition is None:
            continue
        watched_tables, url = _watched(definition)
        hits = [t for t in watched_tables if table_key(t) in tables]
        if url is not None and any(_overlaps(_folder(url), p) for p in paths):
            hits.append(url)
        if hits:
            found.append(DependantTrigger(name, tuple(hits)))
    return found


def restore_dependant_triggers(
    client: WorkspaceClient, root: Path, jobs: Iterable[str]
) -> list[str]:
    """Put back the triggers of ``jobs`` that a killed launcher left paused (markers of
    holders that no longer run); one line per trigger restored or left."""
    lines: list[str] = []
    for job in dict.fromkeys(jobs):
        lines += restore_stale_pauses(client, root, job)
    return lines


@contextmanager
def hold_dependant_triggers(
    client: WorkspaceClient,
    graph: TableGraph,
    written: Iterable[str],
    *,
    definitions: Mapping[str, JobDefinition],
    root: Path,
    job_id_of: Callable[[str], int],
    locations: Iterable[str] = (),
    say: Callable[[str], None] = lambda line: None,
) -> Iterator[list[DependantTrigger]]:
    """Pause, for the block, the trigger of every dependant that watches what the
    backfill writes (after restoring what a killed launcher left paused); yield those
    dependants. The block's end puts each back unless another holder still runs.

    Args:
        written: Every table the backfill writes (all its jobs').
        locations: Storage paths the backfill writes (for file-arrival triggers).
        say: Receives each line about a pause and its end.

    Raises:
        UsageError, WorkspaceRejected, WorkspaceUnreachable, LocalStateProblem: a pause
            could not be made (the pauses already made are restored first).
    """
    dependants = dependant_triggers(graph, definitions, written, locations)
    for line in restore_dependant_triggers(client, root, (d.job for d in dependants)):
        say(line)
    holds: list[SchedulePause] = []
    with ExitStack() as stack:
        stack.callback(_say_restored, holds, say)  # first in, so it runs after the restores
        for dependant in dependants:
            pause = SchedulePause(
                client,
                root=root,
                job=dependant.job,
                job_id=job_id_of(dependant.job),
                fields=("trigger",),
                option=OPTION,
                declared_trigger=declared_trigger(definitions[dependant.job]),
            )
            say(stack.enter_context(pause.hold()))
            holds.append(pause)
        yield dependants


def hold_triggers_detached(
    client: WorkspaceClient,
    *,
    backfill_id: str,
    controller_job_id: int,
    jobs: Mapping[str, int],
    declared: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """Pause the ``trigger`` of each job of ``jobs`` (name -> deployed id) for the detached
    backfill; one line per job, after those of the stale markers restored first. Called
    again (a new controller generation), it keeps one marker per job.

    Args:
        controller_job_id: The deployed ``dbxdec_controller`` job whose runs drive it.
        declared: Job name -> its ``trigger`` as the project declares it.

    Raises:
        UsageError: a bad backfill id, or the workspace refused a change.
        WorkspaceRejected, WorkspaceUnreachable: refused (CAN MANAGE on the job, CAN
            EDIT on the markers' folder) or no answer; what this call paused is put back.
    """
    if not BACKFILL_ID.fullmatch(backfill_id):
        raise UsageError(f"{OPTION}: {backfill_id!r} is not a backfill id")
    holder = RunHolder(backfill_id, controller_job_id)
    lines: list[str] = []
    taken: list[Pause] = []  # the markers this call wrote: put back on failure
    try:
        for job, job_id in jobs.items():
            pause = _detached(client, job, job_id, holder, (declared or {}).get(job))
            lines += restore_stale(client, pause.markers, None, keep=backfill_id)
            line, made = pause.take()
            lines.append(line)
            if made:
                taken.append(pause)
    except BaseException:
        for pause in taken:
            pause.release()
        raise
    return lines


def release_triggers_detached(
    client: WorkspaceClient, *, backfill_id: str, jobs: Mapping[str, int]
) -> list[str]:
    """Drop the backfill's hold on each job's trigger, restoring it when no other live
    backfill holds it; one line per job. Never raises (a failed restore keeps the marker)."""
    holder = RunHolder(backfill_id, 0)
    return [_detached(client, job, job_id, holder).release() for job, job_id in jobs.items()]


def restore_stale_workspace_pauses(client: WorkspaceClient, job: str, job_id: int) -> list[str]:
    """Put back the trigger of ``job`` (deployed job ``job_id``) that detached backfills
    which no longer run left paused; one line per marker dealt with. Never raises."""
    return restore_stale(client, workspace_markers(client, job_id, OPTION), job)


def _detached(
    client: WorkspaceClient,
    job: str,
    job_id: int,
    holder: RunHolder,
    declared: Mapping[str, Any] | None = None,
) -> Pause:
    markers = workspace_markers(client, job_id, OPTION)
    return Pause(
        client,
        markers,
        job=job,
        job_id=job_id,
        holder=holder,
        fields=("trigger",),
        option=OPTION,
        declared_trigger=declared,
    )


def _say_restored(holds: list[SchedulePause], say: Callable[[str], None]) -> None:
    for pause in holds:
        if pause.restore_message is not None:
            say(pause.restore_message)


def _watched(definition: JobDefinition) -> tuple[tuple[str, ...], str | None]:
    """The tables and the location ``definition``'s trigger watches."""
    trigger = definition.trigger
    if isinstance(trigger, TableUpdate):
        return trigger.table_names, None
    if isinstance(trigger, FileArrival):
        return (), trigger.url
    raw: Any = definition.settings.get("trigger")  # passed through as written
    if not isinstance(raw, Mapping):
        return (), None
    update, arrival = raw.get("table_update"), raw.get("file_arrival")
    names = update.get("table_names") if isinstance(update, Mapping) else None
    url = arrival.get("url") if isinstance(arrival, Mapping) else None
    tables = tuple(str(n) for n in names) if isinstance(names, list) else ()
    return tables, str(url) if isinstance(url, str) else None


def _folder(path: str) -> str:
    return path.rstrip("/") + "/"


def _overlaps(a: str, b: str) -> bool:
    """Whether one folder lies in the other."""
    return a.startswith(b) or b.startswith(a)
