"""What the pages show, read from the local ledgers and the workspace's journals: plain
records the templates render (no HTML here)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backfill.check_report import CheckResult
from ..definitions import Registry
from ..errors import UsageError
from ..launch.ledger.journal import JournalSummary
from ..launch.ledger.ledger import (
    Ledger,
    backfill_ids,
    label_of_jobs,
    ledger_dir,
    list_ledgers,
    load_ledger,
)
from ..launch.plan.request import Connection
from ..launch.plan.states import KeyState
from ..launch.run.blocking import ledger_jobs
from ..launch.status.journal_status import (
    JournalPlace,
    locate_journal,
    read_view,
    workspace_journals,
)
from ..launch.status.progress import ledger_eta
from ..launch.status.status_grid import GLYPH, run_page_url
from ..launch.status.timeline import build_timeline, timeline_html
from .viewer import Viewer

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


class NotFound(UsageError):
    """What a page names does not exist (HTTP 404)."""


STATE_GLYPHS = {
    **{str(state): glyph for state, glyph in GLYPH.items()},  # the status grid's, for keys
    "submitting": GLYPH[KeyState.RUNNING],
    "pending": GLYPH[KeyState.MISSING],
    "rejected": "!",
    "skipped": "-",
}
"""A text symbol per run or key state, those of ``dbxdec status`` where the states are
the same: the grid reads the same without colour."""


@dataclass(frozen=True, slots=True)
class BackfillRow:
    """One line of the backfills page."""

    id: str
    job: str
    where: str  # "local" or "workspace"
    state: str
    control: str
    runs: int
    counts: dict[str, int]
    created_at: float
    started_by: str
    eta: str

    @property
    def done(self) -> int:
        return sum(self.counts.get(s, 0) for s in ("succeeded", "failed", "cancelled"))

    @property
    def started(self) -> str:
        return datetime.fromtimestamp(self.created_at, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _row_of_ledger(ledger: Ledger, where: str, control: str, now: float) -> BackfillRow:
    state = "undone" if ledger.undone else str(ledger.state)
    return BackfillRow(
        ledger.id,
        label_of_jobs(ledger_jobs(ledger)),
        where,
        state,
        control,
        len(ledger.slices),
        ledger.counts(),
        ledger.created_at,
        ledger.started_by,
        ledger_eta(ledger, now),
    )


def _row_of_journal(found: JournalSummary, now: float) -> BackfillRow:
    eta = ledger_eta(found.ledger, now) if found.ledger is not None else "?"
    return BackfillRow(
        found.backfill_id,
        label_of_jobs(found.jobs),
        "workspace",
        str(found.state),
        str(found.control),
        sum(found.counts.values()),
        dict(found.counts),
        found.created_at,
        found.started_by,
        eta,
    )


def backfill_rows(
    root: Path, registry: Registry, viewer: Viewer, connection: Connection | None
) -> list[BackfillRow]:
    """Every backfill: the local ledgers, and the journals of the project's deployed jobs
    the viewer may read; newest first."""
    now = time.time()
    rows = [_row_of_ledger(ledger, "local", "", now) for ledger in list_ledgers(root)]
    if viewer.client is not None and connection is not None:
        names = [d.name for d in registry if d.backfill is not None]
        # read as the app's principal for a viewer: only the jobs they may view
        summaries = workspace_journals(
            names, connection, root, client=viewer.client, keep=viewer.may_view
        )
        local = {row.id for row in rows}
        rows += [_row_of_journal(s, now) for s in summaries if s.backfill_id not in local]
    rows.sort(key=lambda row: row.created_at, reverse=True)
    return rows


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed key: its one-line error and its run page."""

    keys: str
    error: str
    run_id: str | None
    url: str | None
    attempt: int


@dataclass(frozen=True, slots=True)
class CheckLine:
    keys: str
    name: str
    passed: bool
    detail: str


@dataclass
class BackfillPage:
    """One backfill, as its page shows it."""

    ledger: Ledger
    where: str
    control: str
    place: JournalPlace | None
    job_id: int | None
    host: str | None
    tasks: tuple[str, ...]
    failures: list[Failure] = field(default_factory=list)
    checks: list[CheckLine] = field(default_factory=list)
    timeline: str = ""
    task_states: dict[int, dict[str, str]] = field(default_factory=dict)
    """Per slice index, each task's state of its last run, read from the run (failed runs)."""

    @property
    def id(self) -> str:
        return self.ledger.id

    @property
    def counts(self) -> dict[str, int]:
        return self.ledger.counts()

    @property
    def ended(self) -> bool:
        return str(self.ledger.state) != "running"

    @property
    def detached(self) -> bool:
        return self.place is not None

    @property
    def state(self) -> str:
        return "undone" if self.ledger.undone else str(self.ledger.state)

    def rows(self, limit: int = 1000) -> list[dict[str, Any]]:
        """The grid: a row per run (its keys), a cell per task, each with its state."""
        found = []
        for record in self.ledger.slices[:limit]:
            state = str(record.state)
            last = record.last
            url = None
            if last is not None:
                url = last.url or run_page_url(self.host, self._job_id(record), last.run_id)
            tasks = self.task_states.get(record.index, {})
            cells = [(t, tasks.get(t, state)) for t in self.tasks or ("run",)]
            found.append(
                {
                    "label": record.label,
                    "state": state,
                    "cells": [(t, s, STATE_GLYPHS.get(s, "?")) for t, s in cells],
                    "glyph": STATE_GLYPHS.get(state, "?"),
                    "attempts": len(record.attempts),
                    "url": url,
                    "error": _one_line(last.error) if last is not None else "",
                }
            )
        return found

    def _job_id(self, record: Any) -> int | None:
        job_ids = self.ledger.backend.job_ids
        if record.job is not None and record.job in job_ids:
            return job_ids[record.job]
        return self.job_id


TASK_RESULTS = {
    "SUCCESS": "succeeded",
    "SUCCESS_WITH_FAILURES": "succeeded",
    "FAILED": "failed",
    "TIMEDOUT": "failed",
    "INTERNAL_ERROR": "failed",
    "CANCELED": "cancelled",
    "UPSTREAM_FAILED": "skipped",
    "UPSTREAM_CANCELED": "skipped",
    "EXCLUDED": "skipped",
    "SKIPPED": "skipped",
}
"""A task run's ``result_state`` (databricks-sdk ``jobs.RunResultState``) in our words."""
MAX_TASK_READS = 50
"""Failed runs whose tasks a backfill page reads (one ``runs/get`` each, kept once read)."""


def task_states(
    client: WorkspaceClient, run_id: str, cache: dict[str, dict[str, str]]
) -> dict[str, str]:
    """Each task's state in run ``run_id`` (an ended run: read once, then from ``cache``)."""
    if run_id not in cache:
        run = client.jobs.get_run(int(run_id))
        states = {}
        for task in run.tasks or ():
            result = task.state.result_state if task.state is not None else None
            if task.task_key and result is not None:
                states[task.task_key] = TASK_RESULTS.get(result.value, "failed")
        cache[run_id] = states
    return cache[run_id]


def _one_line(text: str) -> str:
    first = (text or "").strip().splitlines()
    return first[0][:300] if first else ""


def backfill_page(
    backfill_id: str,
    root: Path,
    registry: Registry,
    viewer: Viewer,
    connection: Connection | None,
    run_tasks: dict[str, dict[str, str]] | None = None,
) -> BackfillPage:
    """Backfill ``backfill_id``: its local ledger, else its journal in the workspace
    (``run_tasks``: the tasks' states of ended runs already read, by run id).

    Raises:
        UsageError: no such backfill here or in the workspace.
    """
    control, place = "", None
    if backfill_id in backfill_ids(ledger_dir(root)):
        ledger = load_ledger(root, backfill_id)
        where = "local ledger"
    elif viewer.client is not None and connection is not None:
        place = locate_journal(backfill_id, connection, root, client=viewer.client)
        viewer.require_view(place.job_id, place.remote_name)
        try:
            view = read_view(place)
        except UsageError as exc:  # no journal of that id
            raise NotFound(exc.render()) from None
        ledger, control = view.ledger, str(view.control)
        where = f"workspace journal of job {place.remote_name} (job id {place.job_id})"
    else:
        raise NotFound(f"no backfill {backfill_id!r} in {ledger_dir(root)}")
    spec = ledger.backend
    job_id = place.job_id if place is not None else spec.job_id
    host = spec.host or (viewer.client.config.host if viewer.client is not None else None)
    jobs = ledger_jobs(ledger)
    tasks: tuple[str, ...] = ()
    if jobs and jobs[0] in registry:
        tasks = tuple(registry.get(jobs[0]).graph.nodes)
    page = BackfillPage(ledger, where, control, place, job_id, host, tasks)
    for record in ledger.slices:
        for check in record.last.checks if record.last is not None else ():
            result = CheckResult.from_json(check)
            measured = "-" if result.measured is None else f"{result.measured:g}"
            detail = f"{measured} (needs {result.limit})" + (
                f": {_one_line(result.detail)}" if result.detail else ""
            )
            name = f"{result.task}: {result.check}" if result.task else result.check
            page.checks.append(CheckLine(result.key or record.label, name, result.passed, detail))
        last = record.last
        if last is not None and last.state == "failed":
            url = last.url or run_page_url(host, page._job_id(record), last.run_id)
            page.failures.append(
                Failure(record.label, _one_line(last.error), last.run_id, url, last.number)
            )
            reads = len(page.task_states) < MAX_TASK_READS and run_tasks is not None
            if reads and viewer.client is not None and last.run_id and place is not None:
                assert run_tasks is not None
                states = task_states(viewer.client, last.run_id, run_tasks)
                page.task_states[record.index] = states
    page.timeline = timeline_html(build_timeline(ledger, now=time.time()))
    return page


def resume_commands(page: BackfillPage, target: str | None) -> list[str]:
    """The commands that go on with, and undo, this backfill from a terminal."""
    t = f" -t {target}" if target and page.detached else ""
    lines = [f"dbxdec backfill --resume {page.id}{' --detach' if page.detached else ''}{t}"]
    lines.append(f"dbxdec backfill undo {page.id}{t}")
    return lines


def job_names(registry: Registry) -> Sequence[str]:
    """The project's jobs that have a backfill definition, by name."""
    return sorted(d.name for d in registry if d.backfill is not None)
