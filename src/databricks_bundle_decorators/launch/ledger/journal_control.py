"""Steering requests kept beside a journal, and the list of journals in the workspace.

``<journal folder>/control/<m:09d>-<op>.json`` (op: ``pause``, ``unpause``, ``cancel``;
``{"format": 1, "op", "by", "at"}``) is created without overwrite by the steering
commands, never by a controller; the controller reads them every tick and the latest
wins. ``m`` is one more than the highest number listed; a create that collides
(``RESOURCE_ALREADY_EXISTS``: someone appended the same op at the same ``m`` meanwhile)
takes the next number. Two *different* ops appended at once can share an ``m`` (their
names differ); they are ordered ``unpause`` < ``pause`` < ``cancel``, so a concurrent
stop is never hidden by a concurrent unpause.
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
    JournalListing,
    check_format,
    journal_folder,
    journals_root,
    read_state,
)
from .ledger import Ledger, ledger_jobs
from .place import create_file, export_bytes, list_names, reading

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
    """The steering requests of a backfill, oldest first: one ``list``, and one ``export``
    per request for who sent it and when (``details=False``: names only, ``by`` ``"?"``
    and ``at`` 0 -- enough for :func:`current_control`, at one request a tick).

    Raises:
        LocalStateProblem: a request of another format.
        WorkspaceUnreachable, WorkspaceRejected: the workspace did not answer or refused.
    """
    folder = f"{journal_folder(job_id, backfill_id, root)}/{CONTROL}"
    ops: list[ControlOp] = []
    with reading(client, f"the steering requests of backfill {backfill_id}"):
        for name in list_names(client, folder) or []:
            match = _NAME.fullmatch(name)
            if match is None:
                continue
            seq, op = int(match.group(1)), match.group(2)
            document = _request(export_bytes(client, f"{folder}/{name}")) if details else None
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
    """Append the steering request ``op`` (``pause``, ``unpause``, ``cancel``) to the
    backfill's journal, at the number after the highest listed; a collision takes the next.

    Raises:
        UsageError: ``op`` is not one of the three, or the backfill has no journal.
        WorkspaceUnreachable, WorkspaceRejected: the workspace did not answer or refused.
    """
    from databricks.sdk.errors import ResourceAlreadyExists

    if op not in get_args(ControlOpName):
        raise UsageError(f"{op!r} is not a steering request: use pause, unpause or cancel")
    folder = journal_folder(job_id, backfill_id, root)
    request: dict[str, object] = {"format": FORMAT, "op": op, "by": by}
    request["at"] = time.time() if at is None else at
    with reading(client, f"the steering requests of backfill {backfill_id}"):
        if not JournalListing.of(list_names(client, folder) or []).segments:
            raise UsageError(
                f"no journal of backfill {backfill_id} in the workspace ({folder}): check the "
                "id and the job (see: dbxdec backfills)"
            )
        control = f"{folder}/{CONTROL}"
        client.workspace.mkdirs(control)
        taken = [int(m.group(1)) for n in list_names(client, control) or [] if (m := _match(n))]
        seq = max(taken, default=0) + 1
        for _ in range(APPEND_TRIES):
            made = ControlOp(seq, op, by, float(request["at"]))  # type: ignore[arg-type]
            try:
                create_file(client, f"{control}/{made.name}", json.dumps(request).encode())
                return made
            except ResourceAlreadyExists:
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
        with reading(client, f"the journals of job {name!r}"):
            ids = list_names(client, f"{journals_root(root)}/job-{int(job_id)}") or []
        for backfill_id in ids:
            try:
                folder = journal_folder(job_id, backfill_id, root)
                state, _ = read_state(client, folder, backfill_id)
                with reading(client, f"the journal of backfill {backfill_id}"):
                    ledger = Ledger.from_json(Path(folder), state.to_json())
                ops = control_ops(client, job_id, backfill_id, root)
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
                    folder=folder,
                    jobs=tuple(ledger_jobs(ledger)),
                )
            )
    return sorted(found, key=lambda s: s.created_at, reverse=True)


def _match(name: str) -> re.Match[str] | None:
    return _NAME.fullmatch(name)


def _request(content: bytes | None) -> dict[str, object] | None:
    try:
        document = json.loads(content or b"")
    except ValueError:
        return None
    return document if isinstance(document, dict) else None
