"""A detached backfill followed from any checkout: its journal in the workspace
(:mod:`..ledger.journal`) found by the deployed job's id, read and summed up
(``status --backfill``, ``backfill watch``, ``backfills --workspace``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...backfill.base import BackfillDef
from ...errors import UsageError, counted
from ..backends.databricks_backend import connect, find_job
from ..ledger.journal import (
    JournalSummary,
    control_ops,
    current_control,
    list_journals,
    read_journal,
)
from ..ledger.ledger import Ledger
from ..plan.plan import selected_keys
from ..plan.request import Connection
from ..plan.states import ControlState
from ..run.blocking import ledger_blocked
from ..workspace.target import read_target

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

_ID = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_\-]*)-\d{8}T\d{6}-[0-9a-f]{4}")
"""A backfill id as :func:`..ledger.ledger.new_backfill_id` makes it: job, stamp, hex."""


@dataclass(frozen=True, slots=True)
class JournalPlace:
    """Where a detached backfill's journal is; ``name_prefix`` and ``dev_mode`` find the other
    jobs of the deployment (the controller) as the backfilled job was found.
    """

    client: WorkspaceClient
    backfill_id: str
    job: str
    job_id: int
    remote_name: str
    name_prefix: str | None = None
    dev_mode: bool = False


def job_of_backfill(backfill_id: str) -> str:
    """The job a backfill id names (``nightly-20240601T020000-1a2b`` -> ``nightly``).

    Raises:
        UsageError: ``backfill_id`` is not a backfill id.
    """
    match = _ID.fullmatch(backfill_id)
    if match is None:
        raise UsageError(
            f"{backfill_id!r} is not a backfill id (JOB-YYYYMMDDTHHMMSS-XXXX; see: dbxdec "
            "backfills --workspace)"
        )
    return match.group(1)


def locate_journal(
    backfill_id: str,
    connection: Connection,
    root: Path,
    *,
    client: WorkspaceClient | None = None,
    job: str | None = None,
    deployed: bool = True,
) -> JournalPlace:
    """Connect to the workspace of ``connection`` and find the deployment of the job that
    backfill ``backfill_id`` runs (``job``: its name when known; ``deployed=False``: only
    connect, the job id is 0).

    Raises:
        UsageError: a malformed id, missing credentials, or the job is not deployed.
        WorkspaceRejected, WorkspaceUnreachable: the workspace refused or did not answer.
    """
    name = job or job_of_backfill(backfill_id)
    target = read_target(root, connection.target) if connection.target else None
    if client is None:
        client = connect(
            host=connection.host or (target.host if target else None),
            profile=connection.profile or (target.profile if target else None),
        )
    prefix = target.name_prefix if target else None
    dev_mode = bool(target and target.dev_mode)
    if not deployed:
        return JournalPlace(client, backfill_id, name, 0, name, prefix, dev_mode)
    remote = find_job(client, name, job_id=connection.job_id, name_prefix=prefix, dev_mode=dev_mode)
    return JournalPlace(client, backfill_id, name, remote.job_id, remote.name, prefix, dev_mode)


def workspace_journals(
    jobs: list[str],
    connection: Connection,
    root: Path,
    *,
    client: WorkspaceClient | None = None,
    keep: Callable[[int], bool] | None = None,
) -> list[JournalSummary]:
    """The journals of the deployed ``jobs`` (others skipped) in the workspace, newest first
    (``client``: instead of connecting; ``keep``: only the jobs whose deployed id it keeps).

    Raises:
        UsageError: missing credentials or an unknown target.
        WorkspaceRejected, WorkspaceUnreachable: the workspace refused or did not answer.
    """
    if not jobs:
        return []
    first = locate_journal("", connection, root, client=client, job=jobs[0], deployed=False)
    job_ids: dict[str, int] = {}
    for name in jobs:
        try:
            job_ids[name] = find_job(
                first.client, name, name_prefix=first.name_prefix, dev_mode=first.dev_mode
            ).job_id
        except UsageError:  # not deployed (or ambiguous): it has no journal to show
            continue
        if keep is not None and not keep(job_ids[name]):
            del job_ids[name]
    return list_journals(first.client, job_ids)


@dataclass(frozen=True, slots=True)
class JournalView:
    """One reading of a detached backfill: its ledger, the steering's state, where it was read."""

    ledger: Ledger
    control: ControlState
    place: JournalPlace | None = None

    @property
    def ended(self) -> bool:
        """Whether the backfill has ended (succeeded, failed, or cancelled and stopped)."""
        return self.ledger.state != "running"


def read_view(place: JournalPlace) -> JournalView:
    """The journal of ``place`` as it stands.

    Raises:
        UsageError: no journal of that backfill for that job.
        LocalStateProblem: a journal of another format, or a damaged one.
        WorkspaceRejected, WorkspaceUnreachable: the workspace refused or did not answer.
    """
    ledger = read_journal(place.client, place.job_id, place.backfill_id)
    ops = control_ops(place.client, place.job_id, place.backfill_id)
    return JournalView(ledger, current_control(ops), place)


def summary_line(view: JournalView) -> str:
    """One line on where a detached backfill is, e.g.
    ``backfill B: running (paused): 3 succeeded, 1 running, 0 failed, 2 pending of 6 runs``.
    """
    ledger = view.ledger
    counts = ledger.counts()
    steering = "" if view.control == "running" else f" ({view.control})"
    in_flight = counts["running"] + counts["submitting"]
    # --downstream: pending behind a key that failed for good (while it runs, a failed
    # key may still be retried: nothing is blocked for good yet)
    blocked = len(ledger_blocked(ledger)) if ledger.state != "running" else 0
    pending = f"{counts['pending']} pending" + (f" ({blocked} blocked)" if blocked else "")
    return (
        f"backfill {ledger.id}: {ledger.state}{steering}: {counts['succeeded']} succeeded, "
        f"{in_flight} running, {counts['failed']} failed, {counts['cancelled']} cancelled, "
        f"{pending} of {counted(len(ledger.slices), 'run')}"
    )


def watch(
    read: Callable[[], JournalView],
    show: Callable[[JournalView], None],
    wait: Callable[[], None],
    *,
    refreshes: int | None = None,
) -> JournalView:
    """Read, show and ``wait`` (where Ctrl-C lands) until the backfill ends or ``refreshes``
    readings were shown; returns the last reading.
    """
    shown = 0
    while True:
        view = read()
        show(view)
        shown += 1
        if view.ended or (refreshes is not None and shown >= refreshes):
            return view
        wait()


def key_bounds(backfill: BackfillDef, ledger: Ledger) -> tuple[str | None, str | None]:
    """The first and last key of the backfill's runs, in the definition's order."""
    ran = {key for record in ledger.slices for key in record.keys}
    ordered = [key for key in selected_keys(backfill, None, None) if key in ran]
    return (ordered[0], ordered[-1]) if ordered else (None, None)
