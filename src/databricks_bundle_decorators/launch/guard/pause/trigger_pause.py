"""No trigger storms: pause the data triggers of a backfill's dependants while it writes.

A backfill that rewrites thirty keys of table ``A`` commits to ``A`` thirty times (or
more); every job whose table-update trigger watches ``A`` would start a run per commit
(or per ``wait_after_last_change`` window). :func:`hold_dependant_triggers` pauses the
``trigger`` setting of each such dependant for the backfill, and only that setting (its
schedule, if any, keeps running), through :class:`.schedule_pause.SchedulePause`: the
same marker, written before the pausing request, so a launcher killed in mid-backfill
leaves it behind and the next command puts the trigger back
(:func:`restore_dependant_triggers`, called first by every hold); a pause that another
backfill (or ``--pause-schedule``) already holds is joined, and the trigger is restored
when the last holder ends.

Which triggers: a ``TableUpdate`` watching a table the backfill writes, and a
``FileArrival`` whose location contains, or lies under, a location the backfill writes
(``locations``: dbxdec knows tables by name, so the caller passes the storage paths
it knows of). A raw ``trigger={...}`` dict is read the same way.

Platform facts relied on:

* ``trigger.pause_status`` (``PAUSED``/``UNPAUSED``) is part of the job's settings and
  changed with ``jobs/update`` (Jobs API reference, ``TriggerSettings.pause_status``:
  "Whether this trigger is paused or not", databricks-sdk-py ``jobs.TriggerSettings``;
  https://docs.databricks.com/api/workspace/jobs/update).
* "When you pause a trigger, any currently active runs continue, but the trigger no
  longer starts new runs" ("Pause and resume job triggers",
  https://docs.databricks.com/aws/en/jobs/triggers). What resuming does about commits
  made while paused the page does not say; dbxdec relies on neither answer (see
  :mod:`...operations.trigger_catch_up`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....bundle.table_graph import TableGraph, table_key
from ....definitions import JobDefinition
from ....definitions.triggers import FileArrival, TableUpdate
from .schedule_pause import SchedulePause, restore_stale_pauses

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = [
    "DependantTrigger",
    "dependant_triggers",
    "hold_dependant_triggers",
    "restore_dependant_triggers",
]

OPTION = "--downstream"
"""What a user drops to run the backfill without pausing its dependants' triggers."""


@dataclass(frozen=True, slots=True)
class DependantTrigger:
    """A job whose trigger would fire on the backfill's writes.

    Attributes:
        job: The dbxdec job name.
        watched: The written tables (or locations) its trigger watches.
    """

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
    backfill writes; yield those dependants.

    Args:
        client: The workspace of the dependants.
        graph: The bundle's table graph.
        written: Every table the backfill writes (all its jobs').
        definitions: The jobs of ``graph`` by name (their triggers).
        root: The project root (markers under ``.dbxdec/paused``).
        job_id_of: The deployed job id of a dbxdec job (e.g. :func:`...backends.
            databricks_backend.find_job`'s ``job_id``).
        locations: Storage paths the backfill writes (for file-arrival triggers).
        say: Receives each line about a pause and its end (restored, joined, left).

    First restores what an earlier, killed launcher left paused for these jobs, then
    pauses each (marker first). On leaving the block, normally, on an exception or on
    Ctrl-C, each trigger is put back as it was, unless another holder still runs.

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
            )
            say(stack.enter_context(pause.hold()))
            holds.append(pause)
        yield dependants


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
    """Whether one folder lies in the other: files written under ``b`` arrive under a
    trigger watching ``a`` when either contains the other."""
    return a.startswith(b) or b.startswith(a)
