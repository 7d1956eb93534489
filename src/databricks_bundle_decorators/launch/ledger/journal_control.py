"""Steering requests kept beside a journal, and the list of journals in the workspace.

``<journal folder>/control/<m:09d>-<op>.json`` (op: ``pause``, ``unpause``, ``cancel``;
``{"format": 1, "op", "by", "at"}``) is created if absent by the steering commands,
never by a controller; the controller reads them every tick and the latest wins. ``m``
is one more than the highest number listed; a create that collides (someone appended
the same op at the same ``m`` meanwhile) takes the next number. Two *different* ops
appended at once can share an ``m`` (their names differ); they are ordered ``unpause`` <
``pause`` < ``cancel``, so a concurrent stop is never hidden by a concurrent unpause.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from ...errors import LocalStateProblem, UsageError
from ..plan.states import BackfillState, ControlState
from .journal_read import (
    FORMAT,
    JOURNAL_DIR_ENV,
    JournalListing,
    check_format,
    journal_place,
    journals_root,
    read_state,
)
from .ledger import Ledger, ledger_jobs
from .place import Place, WorkspacePlace, reading

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

ControlOpName = Literal["pause", "unpause", "cancel"]
CONTROL = "control"
_RANK: Mapping[str, int] = {"unpause": 0, "pause": 1, "cancel": 2}
_STATE: Mapping[str, ControlState] = {
    "unpause": ControlState.RUNNING,
    "pause": ControlState.PAUSED,
    "cancel": ControlState.CANCELLED,
}
_NAME = re.compile(r"(\d{9})-(pause|unpause|cancel)\.json")
APPEND_TRIES = 10


@dataclass(frozen=True, slots=True)
class ControlOp:
    """One steering request: its number ``seq`` (the ``m`` of its name), what, by whom,
    when (epoch seconds)."""

    seq: int
    op: ControlOpName
    by: str
    at: float

    @property
    def name(self) -> str:
        return f"{self.seq:09d}-{self.op}.json"

    @property
    def order(self) -> tuple[int, int]:
        return self.seq, _RANK[self.op]


@dataclass(frozen=True, slots=True)
class JournalSummary:
    """One workspace journal, as ``dbxdec backfills`` lists it."""

    backfill_id: str
    job: str
    job_id: int
    state: BackfillState
    counts: Mapping[str, int]
    control: ControlState
    created_at: float
    folder: str
    jobs: tuple[str, ...]
    """The jobs its runs run, the named job first (``--downstream``: more than one)."""

    @property
    def paused(self) -> bool:
        return self.control == "paused"

    @property
    def cancelled(self) -> bool:
        return self.control == "cancelled"


def current_control(ops: Sequence[ControlOp]) -> ControlState:
    """What the latest op asks for (``running`` when there is none)."""
    if not ops:
        return ControlState.RUNNING
    return _STATE[max(ops, key=lambda o: o.order).op]


def control_ops(
    client: WorkspaceClient,
    job_id: int,
    backfill_id: str,
    root: str | None = None,
    *,
    details: bool = True,
) -> list[ControlOp]:
    """:func:`read_controls` of the backfill's journal in the workspace."""
    return read_controls(journal_place(client, job_id, backfill_id, root), details=details)


def read_controls(journal: Place, *, details: bool = True) -> list[ControlOp]:
    """The steering requests beside the journal in ``journal``, oldest first: one
    listing, and one read per request for who sent it and when (``details=False``: names
    only, ``by`` ``"?"`` and ``at`` 0 -- enough for :func:`current_control`, at one
    request a tick).

    Raises:
        LocalStateProblem: a request of another format.
        WorkspaceUnreachable, WorkspaceRejected: the workspace did not answer or refused.
    """
    backfill_id, control = _backfill_id(journal), journal.child(CONTROL)
    ops: list[ControlOp] = []
    with reading(journal, f"the steering requests of backfill {backfill_id}"):
        for name in control.names():
            match = _NAME.fullmatch(name)
            if match is None:
                continue
            seq, op = int(match.group(1)), match.group(2)
            document = _request(control.read(name)) if details else None
            if document is not None:
                check_format(document, backfill_id)
            by, at = (document or {}).get("by"), (document or {}).get("at")
            ops.append(
                ControlOp(
                    seq,
                    op,  # type: ignore[arg-type]  # the pattern admits only the three ops
                    str(by) if by else "?",
                    float(at) if isinstance(at, int | float) else 0.0,
                )
            )
    return sorted(ops, key=lambda o: o.order)


def append_control(
    client: WorkspaceClient,
    job_id: int,
    backfill_id: str,
    op: str,
    *,
    by: str,
    root: str | None = None,
    at: float | None = None,
) -> ControlOp:
    """:func:`append_to` the backfill's journal in the workspace."""
    return append_to(journal_place(client, job_id, backfill_id, root), op, by=by, at=at)


def append_to(journal: Place, op: str, *, by: str, at: float | None = None) -> ControlOp:
    """Append the steering request ``op`` (``pause``, ``unpause``, ``cancel``) beside the
    journal in ``journal``, at the number after the highest listed; a collision takes
    the next.

    Raises:
        UsageError: ``op`` is not one of the three, or there is no journal.
        WorkspaceUnreachable, WorkspaceRejected: the workspace did not answer or refused.
    """
    if op not in get_args(ControlOpName):
        raise UsageError(f"{op!r} is not a steering request: use pause, unpause or cancel")
    backfill_id, control = _backfill_id(journal), journal.child(CONTROL)
    request: dict[str, object] = {"format": FORMAT, "op": op, "by": by}
    request["at"] = time.time() if at is None else at
    with reading(journal, f"the steering requests of backfill {backfill_id}"):
        JournalListing.read(journal, backfill_id)
        control.make()
        taken = [int(m.group(1)) for n in control.names() if (m := _NAME.fullmatch(n))]
        seq = max(taken, default=0) + 1
        for _ in range(APPEND_TRIES):
            made = ControlOp(seq, op, by, float(request["at"]))  # type: ignore[arg-type]
            if control.create(made.name, json.dumps(request)):
                return made
            seq += 1  # another request took this number meanwhile
    raise LocalStateProblem(
        f"could not append {op} to backfill {backfill_id}: {APPEND_TRIES} numbers in a row "
        "were taken meanwhile; try again"
    )


def list_journals(
    client: WorkspaceClient, job_ids: Mapping[str, int], root: str | None = None
) -> list[JournalSummary]:
    """Every readable journal of the jobs ``job_ids`` (name -> job id), newest first. A
    damaged journal, or one of another format, is left out rather than hiding the others.

    Raises:
        WorkspaceUnreachable, WorkspaceRejected: the workspace did not answer or refused.
    """
    found: list[JournalSummary] = []
    for name, job_id in job_ids.items():
        jobs = WorkspacePlace(
            client,
            f"{journals_root(root)}/job-{int(job_id)}",
            what="the journals folder",
            advice=f"or set {JOURNAL_DIR_ENV} to a folder they can write",
        )
        with reading(jobs, f"the journals of job {name!r}"):
            ids = jobs.names()
        for backfill_id in ids:
            try:
                journal = journal_place(client, job_id, backfill_id, root)
                state, _ = read_state(journal, backfill_id)
                with reading(journal, f"the journal of backfill {backfill_id}"):
                    ledger = Ledger.from_json(Path(journal.folder), state.to_json())
                ops = read_controls(journal)
            except (UsageError, LocalStateProblem):
                continue
            found.append(
                JournalSummary(
                    backfill_id=ledger.id,
                    job=ledger.job,
                    job_id=int(job_id),
                    state=ledger.state,
                    counts=ledger.counts(),
                    control=current_control(ops),
                    created_at=ledger.created_at,
                    folder=journal.folder,
                    jobs=tuple(ledger_jobs(ledger)),
                )
            )
    return sorted(found, key=lambda s: s.created_at, reverse=True)


def _backfill_id(journal: Place) -> str:
    return journal.folder.rsplit("/", 1)[-1]


def _request(content: str | None) -> dict[str, object] | None:
    try:
        document = json.loads(content or "")
    except ValueError:
        return None
    return document if isinstance(document, dict) else None
