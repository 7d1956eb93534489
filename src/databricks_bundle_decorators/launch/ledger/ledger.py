"""The backfill ledger: one SQLite database per backfill, written on every change.

``<project root>/.dbxdec/backfills/<id>.sqlite`` holds the plan, each slice's attempts
(idempotency token, run id, state, timings, error), how to reach the backend (host,
profile, job id -- never a credential) and the versions its undos made. An attempt is
recorded *before* its run is submitted, so a launcher killed at any point resumes by
re-submitting the same token, which the Jobs API answers with the run it already created.
A save writes only the slices that changed (:mod:`.ledger_store`: how, and why SQLite).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ...errors import LocalStateProblem, UsageError, did_you_mean
from ..plan.options import LaunchOptions as LaunchOptions
from ..plan.plan import BackfillPlan
from ..plan.states import SLICE_STATES, BackfillState
from .ledger_ids import attempt_token as attempt_token
from .ledger_ids import new_backfill_id as new_backfill_id
from .ledger_store import LedgerStore, SliceStore, backfill_ids, read_store, why
from .ledger_store import ledger_dir as ledger_dir
from .local_state import one_line, os_reason
from .records import Attempt as Attempt
from .records import BackendKind as BackendKind
from .records import BackendSpec as BackendSpec
from .records import SliceRecord as SliceRecord

LEDGER_VERSION = 1
_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,150}")


class Ledger:
    """The durable state of one backfill. :meth:`save` writes it atomically."""

    def __init__(
        self,
        path: Path,
        *,
        backfill_id: str,
        job: str,
        backend: BackendSpec,
        options: LaunchOptions,
        slices: list[SliceRecord],
        created_at: float | None = None,
        state: BackfillState = BackfillState.RUNNING,
        store: SliceStore | None = None,
        undone: frozenset[tuple[str, int]] = frozenset(),
    ) -> None:
        """``store``: where saves go (default: the SQLite database at ``path``);
        ``undone``: as :attr:`undone`."""
        self.path = path
        self.id = backfill_id
        self.job = job
        self.backend = backend
        self.options = options
        self._slices = slices
        self.created_at = time.time() if created_at is None else created_at
        self.updated_at = self.created_at
        self.state: BackfillState = state
        self.undone = undone
        """``(table, version)`` of every commit an undo of this backfill made: ``RESTORE``
        takes no writer options, so a later undo knows its own commits by these."""
        self.dirty = True
        self.save_failure = ""
        """Why a save failed in this session (kept after a later save succeeds)."""
        self._changed: set[int] = set(range(len(slices)))  # indices not saved since changed
        self._bound = store  # e.g. a journal in the workspace (.journal.JournalStore)
        self._store: SliceStore | None = store  # else the database, opened by the first save

    @classmethod
    def create(
        cls,
        root: Path,
        plan: BackfillPlan,
        *,
        backend: BackendSpec,
        options: LaunchOptions,
        backfill_id: str | None = None,
    ) -> Ledger:
        """A new ledger for ``plan`` (not yet saved)."""
        bid = backfill_id or new_backfill_id(plan.job)
        slices = [SliceRecord(s.index, s.keys, plan.parameters(s)) for s in plan.slices]
        return cls(
            ledger_dir(root) / f"{bid}.sqlite",
            backfill_id=bid,
            job=plan.job,
            backend=backend,
            options=options,
            slices=slices,
        )

    @property
    def slices(self) -> list[SliceRecord]:
        """The slices; after new ones are assigned (a re-batch) a save writes those that differ."""
        return self._slices

    @slices.setter
    def slices(self, records: list[SliceRecord]) -> None:
        old, self._slices = self._slices, records
        self._changed.update(i for i, r in enumerate(records) if i >= len(old) or r is not old[i])
        self.dirty = self.dirty or len(records) != len(old) or bool(self._changed)

    def update(self, record: SliceRecord) -> None:
        self._slices[record.index] = record
        self._changed.add(record.index)
        self.dirty = True

    def set_state(self, state: BackfillState) -> None:
        if state != self.state:
            self.state = state
            self.dirty = True

    def record_undone(self, table: str, version: int) -> None:
        """Add ``(table, version)`` to :attr:`undone` and save (synced).

        Raises:
            LocalStateProblem: the ledger cannot be saved.
        """
        self.undone = self.undone | {(table, int(version))}
        self.dirty = True
        self.save()

    def counts(self) -> dict[str, int]:
        """Slices per state (every state present, zero included)."""
        return {state: sum(r.state == state for r in self.slices) for state in SLICE_STATES}

    def _header(self) -> dict[str, Any]:
        return {
            "version": LEDGER_VERSION,
            "id": self.id,
            "job": self.job,
            "state": self.state,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "backend": asdict(self.backend),
            "options": self.options.to_json(),
            **({"undone": [list(pair) for pair in sorted(self.undone)]} if self.undone else {}),
        }

    def to_json(self) -> dict[str, Any]:
        return {**self._header(), "slices": [_slice_json(r) for r in self.slices]}

    @property
    def bound_store(self) -> SliceStore | None:
        """The store this ledger was bound to (a journal), ``None`` for the SQLite file."""
        return self._bound

    def bind(self, store: SliceStore) -> None:
        """Save through ``store`` from now on; the next save writes every slice."""
        self.close()
        self._bound = self._store = store
        self._changed.update(range(len(self._slices)))
        self.dirty = True

    @classmethod
    def from_json(
        cls, path: Path, data: Mapping[str, Any], *, store: SliceStore | None = None
    ) -> Ledger:
        slices = [
            SliceRecord(
                int(s["index"]),
                tuple(s["keys"]),
                dict(s["parameters"]),
                tuple(Attempt(**{**a, "checks": tuple(a["checks"])}) for a in s["attempts"]),
                s.get("job"),  # absent: the ledger's job
                tuple(s.get("waits_for", ())),
            )
            for s in data["slices"]
        ]
        ledger = cls(
            path,
            backfill_id=str(data["id"]),
            job=str(data["job"]),
            backend=BackendSpec(**data["backend"]),
            options=LaunchOptions(**data["options"]),
            slices=slices,
            created_at=float(data["created_at"]),
            state=data["state"],
            store=store,
            undone=frozenset((str(t), int(v)) for t, v in data.get("undone", ())),
        )
        ledger.updated_at = float(data["updated_at"])
        ledger.dirty = False
        ledger._changed.clear()
        return ledger

    def save(self) -> None:
        """Commit the header and the slices changed since the last save in one transaction,
        synced before this returns.

        Raises:
            LocalStateProblem: the database cannot be written (full disk, unwritable
                folder); what is on disk is the last saved ledger, whole.
        """
        self.updated_at = time.time()
        if self._store is None:
            self._store = self._bound or LedgerStore(self.path)
        rows = {i: _slice_json(self._slices[i]) for i in self._changed if i < len(self._slices)}
        try:
            self._store.write(self._header(), rows.items(), len(self._slices))
        except (OSError, sqlite3.Error) as exc:
            reason = os_reason(exc, self.path.parent) if isinstance(exc, OSError) else why(exc)
            self.save_failure = self.save_failure or reason
            raise LocalStateProblem(f"cannot save backfill ledger {self.path}: {reason}") from None
        self.path = self._store.path
        self._changed.clear()
        self.dirty = False

    def close(self) -> None:
        """Close the database (a later save opens it again; a bound store stays bound)."""
        if self._store is not None:
            self._store.close()
            self._store = self._bound

    def save_if_dirty(self) -> None:
        if self.dirty:
            self.save()


def _slice_json(record: SliceRecord) -> dict[str, Any]:
    return {
        "index": record.index,
        "keys": list(record.keys),
        "parameters": dict(record.parameters),
        "attempts": [asdict(a) for a in record.attempts],
        **({"job": record.job, "waits_for": list(record.waits_for)} if record.job else {}),
    }


def load_ledger(root: Path, backfill_id: str) -> Ledger:
    """The ledger of backfill ``backfill_id`` in the project at ``root``.

    Raises:
        UsageError: the id is malformed or unknown.
        LocalStateProblem: the file cannot be read or is damaged.
    """
    if _ID.fullmatch(backfill_id) is None:
        raise UsageError(f"--resume: {backfill_id!r} is not a backfill id (see: dbxdec backfills)")
    known = backfill_ids(ledger_dir(root))
    if backfill_id not in known:
        hint = did_you_mean(backfill_id, sorted(known)) or " List them with: dbxdec backfills"
        raise UsageError(f"no backfill {backfill_id!r} in {ledger_dir(root)}.{hint}")
    return read_ledger(ledger_dir(root) / f"{backfill_id}.sqlite")


def read_ledger(path: Path) -> Ledger:
    """The ledger in the database ``path`` (``<id>.sqlite``).

    Raises:
        LocalStateProblem: the file cannot be read or is not a ledger (damaged); the
            message says how to go on without it.
    """
    try:
        header, slices = read_store(path)
        return Ledger.from_json(path, {**header, "slices": slices})
    except OSError as exc:
        raise LocalStateProblem(
            f"cannot read backfill ledger {path}: {os_reason(exc, path.parent)}"
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError, sqlite3.Error) as exc:
        job = path.stem.rsplit("-", 2)[0]
        raise LocalStateProblem(
            f"backfill ledger {path} is damaged ({type(exc).__name__}: {one_line(exc)}), so "
            "it cannot be resumed: restore the file from a backup, or move it aside and launch "
            f"the keys that have no successful run yet with: dbxdec catchup {job} --start KEY "
            "--end KEY"
        ) from None


def list_ledgers(root: Path, job: str | None = None) -> list[Ledger]:
    """Every readable ledger of the project (of one job: see :func:`job_part`), newest first."""
    found: list[Ledger] = []
    folder = ledger_dir(root)
    for backfill_id in backfill_ids(folder):
        try:
            ledger = read_ledger(folder / f"{backfill_id}.sqlite")
        except LocalStateProblem:
            continue  # a damaged file must not hide the others
        if job is None or ledger.job == job or any(r.job == job for r in ledger.slices):
            found.append(ledger if job is None else job_part(ledger, job))
    return sorted(found, key=lambda item: item.created_at, reverse=True)


def ledger_jobs(ledger: Ledger) -> list[str]:
    """The jobs ``ledger``'s slices run, the named job first (a slice without a job is
    the ledger's job's)."""
    return list(dict.fromkeys([ledger.job, *(r.job or ledger.job for r in ledger.slices)]))


def label_of_jobs(jobs: Sequence[str]) -> str:
    """``a`` for one job; ``a --downstream: b, c`` across jobs (the named job first)."""
    return f"{jobs[0]} --downstream: {', '.join(jobs[1:])}" if len(jobs) > 1 else jobs[0]


def job_part(ledger: Ledger, job: str) -> Ledger:
    """``ledger`` as a one-job ledger of ``job`` (``--downstream``: only ``job``'s slices,
    numbered from 0; read it, never save it); ``ledger`` itself when all are ``job``'s."""
    mine = [r for r in ledger.slices if (r.job or ledger.job) == job]
    if len(mine) == len(ledger.slices) and ledger.job == job:
        return ledger
    slices = [replace(r, index=i, job=None, waits_for=()) for i, r in enumerate(mine)]
    data = {**ledger.to_json(), "job": job, "slices": [_slice_json(r) for r in slices]}
    return Ledger.from_json(ledger.path, data)
