"""The backfill ledger: its records, and one SQLite database per backfill,
``<project root>/.dbxdec/backfills/<id>.sqlite``, written on every change.

The database holds a ``ledger`` table (one row: the header as JSON) and a ``slices``
table (one JSON row per slice); a save replaces the header and the changed slices in one
transaction. WAL mode is the append-only journal (checksummed frames, a torn tail ignored
on recovery) and its checkpoints the compaction; readers get a consistent snapshot
without blocking the launcher. ``synchronous=FULL``: an attempt is on disk, through a
power loss too, *before* its run is submitted, so a launcher killed at any point resumes
by re-submitting the same idempotency token, which the Jobs API answers with the run it
already created. The database is created in one transaction: a launcher killed
meanwhile leaves a whole ledger or one with no tables (damaged).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shlex
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from ...backfill.wire import SwapOrder, keys_label, order_in
from ...errors import LocalStateProblem, UsageError, did_you_mean
from ..plan.history import RunObservation
from ..plan.options import LaunchOptions as LaunchOptions
from ..plan.options import default_of
from ..plan.plan import BackfillPlan
from ..plan.states import SLICE_STATES, BackfillState, KeyState, RunState
from .place import one_line, os_reason

SCHEMA_VERSION = 1
_SCHEMA = (
    "CREATE TABLE ledger (one INTEGER PRIMARY KEY CHECK (one = 1), header TEXT NOT NULL)",
    "CREATE TABLE slices (idx INTEGER PRIMARY KEY, body TEXT NOT NULL)",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)
BackendKind = Literal["databricks", "local"]
_T = TypeVar("_T")
LEDGER_VERSION = 1
_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,150}")
MAX_LISTED_KEYS = 100


class SliceStore(Protocol):
    """Where a ledger's saves go: :class:`LedgerStore` or a workspace journal."""

    @property
    def path(self) -> Path:
        """Where the ledger lives, as ``Ledger.path`` shows it."""

    def write(
        self, header: dict[str, Any], changed: Iterable[tuple[int, dict[str, Any]]], count: int
    ) -> None:
        """Keep ``header``, the ``changed`` slices and the slice ``count``, whole or not at all."""

    def close(self) -> None:
        """Release what the store holds open."""


def ledger_dir(root: Path) -> Path:
    """Where the ledgers of a project live."""
    return root / ".dbxdec" / "backfills"


class NotALedger(ValueError):
    """The database holds no ledger (its launcher was killed before the first commit)."""


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


class LedgerStore:
    """The writer of one ledger database (one launcher owns a backfill; saves from several
    threads are serialised); keeps its connection open between saves."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_suffix(".sqlite")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))  # as mkstemp would
            conn = _connect(self.path)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
            except sqlite3.Error:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def write(
        self, header: dict[str, Any], changed: Iterable[tuple[int, dict[str, Any]]], count: int
    ) -> None:
        """Commit ``header`` and the ``changed`` slices; rows at or past ``count`` are
        deleted (a re-batched tail that shrank).

        Raises:
            OSError: the folder cannot be created.
            sqlite3.Error: the database cannot be written; nothing of this save is kept.
        """
        with self._lock:
            conn = self._open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                if not _has_ledger(conn):
                    for statement in _SCHEMA:
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR REPLACE INTO ledger (one, header) VALUES (1, ?)",
                    (json.dumps(_with_undone_kept(conn, header)),),
                )
                conn.executemany(
                    "INSERT OR REPLACE INTO slices (idx, body) VALUES (?, ?)",
                    ((i, json.dumps(body)) for i, body in changed if i < count),
                )
                conn.execute("DELETE FROM slices WHERE idx >= ?", (count,))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Close the connection (SQLite checkpoints the log when the last one closes)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _with_undone_kept(conn: sqlite3.Connection, header: dict[str, Any]) -> dict[str, Any]:
    """``header`` with the undone versions already in the database added (``undo`` records
    them through its own ``Ledger``; a launcher saving later must not drop them)."""
    row = conn.execute("SELECT json_extract(header, '$.undone') FROM ledger WHERE one = 1")
    found = row.fetchone()
    if found is None or found[0] is None:
        return header
    stored = json.loads(found[0])
    pairs = {(str(t), int(v)) for t, v in [*stored, *header.get("undone", [])]}
    return {**header, "undone": [list(pair) for pair in sorted(pairs)]}


def why(exc: sqlite3.Error) -> str:
    """What went wrong, in a few words: ``disk I/O error (SQLITE_IOERR_WRITE)``."""
    name = getattr(exc, "sqlite_errorname", "")
    text = " ".join(str(exc).split())[:200] or type(exc).__name__
    return f"{text} ({name})" if name else text


def _has_ledger(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger'")
    return row.fetchone() is not None


def backfill_ids(folder: Path) -> set[str]:
    """The ids of the ledgers in ``folder``."""
    return {p.stem for p in folder.glob("*.sqlite")}


def read_store(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the slices (in index order) of the ledger database ``path``, one
    consistent snapshot even while a launcher writes it.

    Raises:
        FileNotFoundError: there is no such file (none is created).
        NotALedger: the database holds no ledger.
        sqlite3.Error, ValueError: the file is not a database, or a row not JSON.
    """
    if not path.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    conn = _connect(path)
    try:
        conn.execute("BEGIN")  # one read transaction: the header and slices agree
        if not _has_ledger(conn):
            raise NotALedger("the database holds no ledger")
        row = conn.execute("SELECT header FROM ledger WHERE one = 1").fetchone()
        if row is None:
            raise NotALedger("the database holds no ledger header")
        bodies = conn.execute("SELECT body FROM slices ORDER BY idx").fetchall()
        conn.execute("COMMIT")
    finally:
        conn.close()
    header: dict[str, Any] = json.loads(row[0])
    return header, [json.loads(body) for (body,) in bodies]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One submission of a slice, times in epoch seconds: ``submitted_at`` the launcher's,
    ``started_at``/``ended_at`` the run's own when known. ``rejected``: no run exists."""

    number: int
    token: str
    state: RunState = RunState.SUBMITTING
    run_id: str | None = None
    url: str | None = None
    submitted_at: float | None = None
    ended_at: float | None = None
    error: str = ""
    started_at: float | None = None
    gave_up: str = ""  # which retry budget was spent, e.g. "retries spent: 3 of 3"; or ""
    checks: Sequence[Mapping[str, Any]] = ()  # check_report.CheckResult.to_json() each

    @property
    def is_open(self) -> bool:
        """Whether the outcome is still unknown (submitted or running)."""
        return self.state in ("submitting", "running")

    @property
    def seconds(self) -> float | None:
        start = self.submitted_at if self.started_at is None else self.started_at
        if start is None or self.ended_at is None:
            return None
        return max(0.0, self.ended_at - start)


@dataclass(frozen=True, slots=True)
class SliceRecord:
    """A slice of the plan and its attempts so far."""

    index: int
    keys: tuple[str, ...]
    parameters: Mapping[str, str]
    attempts: tuple[Attempt, ...] = ()
    job: str | None = None  # a --downstream slice's job (None: the ledger's job)
    waits_for: tuple[int, ...] = ()  # --downstream: slices that must succeed first

    @property
    def label(self) -> str:
        """The keys' label (``--downstream``: ``b 2024-01-31``); ``"full-refresh swap"``."""
        if self.job is not None:
            return f"{self.job} {keys_label(self.keys)}"
        if not self.keys and isinstance(order_in(self.parameters), SwapOrder):
            return "full-refresh swap"
        return keys_label(self.keys)

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def state(self) -> RunState:
        last = self.last
        if last is None:
            return RunState.PENDING
        return RunState.FAILED if last.state == RunState.REJECTED else last.state

    def attempt(self, number: int) -> Attempt:
        """The attempt numbered ``number``."""
        return next(a for a in self.attempts if a.number == number)

    def with_attempt(self, attempt: Attempt) -> SliceRecord:
        """This slice with ``attempt`` added, or replacing the attempt of its number."""
        kept = tuple(a for a in self.attempts if a.number != attempt.number)
        return replace(self, attempts=(*kept, attempt))


@dataclass(frozen=True, slots=True)
class BackendSpec:
    """How to reach the backend again on ``--resume`` (no credentials)."""

    kind: BackendKind
    job_id: int | None = None
    remote_name: str | None = None
    host: str | None = None
    profile: str | None = None
    target: str | None = None
    job_ids: Mapping[str, int] = field(default_factory=dict)
    """``--downstream`` on Databricks: every job's deployed id, by dbxdec job name (a
    controller run drives them all from the journal alone); empty for one job."""


def new_backfill_id(job: str, *, now: float | None = None) -> str:
    """A unique, sortable id: ``<job>-<UTC yyyymmddThhmmss>-<4 hex>``."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{job}-{stamp}-{secrets.token_hex(2)}"


def attempt_token(backfill_id: str, keys: tuple[str, ...], attempt: int) -> str:
    """The idempotency token (at most 64 characters) of one attempt of one slice: derived,
    so a re-submission after a crash cannot create a second run."""
    material = "\0".join((backfill_id, keys[0] if keys else "", keys[-1] if keys else ""))
    digest = hashlib.sha256(f"{material}\0{attempt}".encode()).hexdigest()
    return f"dbxdec-{digest[:40]}-{attempt}"


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
        started_by: str = "",
        because: str = "",
    ) -> None:
        self.path = path
        self.id = backfill_id
        self.job = job
        self.backend = backend
        self.options = options
        self._slices = slices
        self.created_at = time.time() if created_at is None else created_at
        self.updated_at = self.created_at
        self.state: BackfillState = state
        self.started_by = started_by  # who launched it: a user name, or "" when unknown
        self.because = because  # why, in the launcher's words (dbxdec restate --because)
        self.undone = undone
        """``(table, version)`` of every commit an undo of this backfill made."""
        self.dirty = True
        self.save_failure = ""
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
        started_by: str = "",
    ) -> Ledger:
        """A new ledger for ``plan`` (not yet saved); ``started_by``: who launches it."""
        bid = backfill_id or new_backfill_id(plan.job)
        slices = [SliceRecord(s.index, s.keys, plan.parameters(s)) for s in plan.slices]
        return cls(
            ledger_dir(root) / f"{bid}.sqlite",
            backfill_id=bid,
            job=plan.job,
            backend=backend,
            options=options,
            slices=slices,
            started_by=started_by,
        )

    @property
    def slices(self) -> list[SliceRecord]:
        """The slices; assigning new ones (a re-batch) saves those that differ."""
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
        """Add ``(table, version)`` to :attr:`undone` and save (synced)."""
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
            **({"started_by": self.started_by} if self.started_by else {}),
            **({"because": self.because} if self.because else {}),
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
            started_by=str(data.get("started_by", "")),
            because=str(data.get("because", "")),
        )
        ledger.updated_at = float(data["updated_at"])
        ledger.dirty = False
        ledger._changed.clear()
        return ledger

    def save(self) -> None:
        """Commit the header and the changed slices in one synced transaction.

        Raises:
            LocalStateProblem: it cannot be written; the last saved ledger stays whole.
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


def read_detached(backfill_id: str, root: Path, journal: Callable[[], _T], *, hint: str = "") -> _T:
    """``journal()``: the reading of the workspace journal of a backfill with no local
    ledger (callers look first: ``backfill_id in backfill_ids(ledger_dir(root))``); its
    :class:`UsageError` becomes one saying neither was found, ending with ``hint``."""
    try:
        return journal()
    except UsageError as missing:
        if _ID.fullmatch(backfill_id) is None:
            raise  # not an id at all: the reader said so
        asked = "credentials" not in missing.render()  # else no workspace could be asked
        where = (
            ", nor a detached one in the workspace"
            if asked
            else " (no credentials to ask the workspace)"
        )
        job = backfill_id.rsplit("-", 2)[0]
        known = sorted(
            (i for i in backfill_ids(ledger_dir(root)) if i.rsplit("-", 2)[0] == job),
            reverse=True,
        )
        listed = (
            f"; backfills of {job} here: {', '.join(known[:MAX_LISTED_IDS])}"
            f"{' ... (dbxdec backfills)' if len(known) > MAX_LISTED_IDS else ''}"
            if known
            else f"; no backfill of {job} here"
        )
        raise UsageError(f"no backfill {backfill_id!r} here{where}{listed}{hint}") from None


MAX_LISTED_IDS = 2
"""Known backfill ids an unknown id's error lists, newest first."""


def read_ledger(path: Path) -> Ledger:
    """The ledger in the database ``path`` (``<id>.sqlite``).

    Raises:
        LocalStateProblem: the file cannot be read or is damaged.
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


def list_ledgers(
    root: Path, job: str | None = None, *, backend: BackendKind | None = None
) -> list[Ledger]:
    """Every readable ledger of the project (of one job: see :func:`job_part`; of one
    ``backend``: ``"local"`` for what ``--local`` reads), newest first."""
    found: list[Ledger] = []
    folder = ledger_dir(root)
    for backfill_id in backfill_ids(folder):
        try:
            ledger = read_ledger(folder / f"{backfill_id}.sqlite")
        except LocalStateProblem:
            continue  # a damaged file must not hide the others
        if backend is not None and ledger.backend.kind != backend:
            continue
        if job is None or ledger.job == job or any(r.job == job for r in ledger.slices):
            found.append(ledger if job is None else job_part(ledger, job))
    return sorted(found, key=lambda item: item.created_at, reverse=True)


def ledger_jobs(ledger: Ledger) -> list[str]:
    """The jobs ``ledger``'s slices run, the named job first."""
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


def ledger_observations(ledgers: list[Ledger]) -> list[RunObservation]:
    """Every attempt recorded in ``ledgers`` as a run observation (for local history)."""
    observed: list[RunObservation] = []
    for ledger in ledgers:
        for record in ledger.slices:
            for attempt in record.attempts:
                if attempt.state == "rejected" or not record.keys:
                    continue
                state = (
                    KeyState(attempt.state)
                    if attempt.state in (RunState.SUCCEEDED, RunState.CANCELLED)
                    else KeyState.RUNNING
                    if attempt.is_open and ledger.state == BackfillState.RUNNING
                    else KeyState.FAILED
                )
                started = attempt.submitted_at or ledger.created_at
                observed.append(
                    RunObservation(record.keys, state, started, attempt.run_id or "", attempt.error)
                )
    return observed


def _connection_args(ledger: Ledger) -> list[str]:
    spec = ledger.backend
    if spec.kind == "local":
        return ["--local"]
    args: list[str] = []
    if spec.job_id is not None:
        args += ["--job-id", str(spec.job_id)]
    if spec.profile:
        args += ["--profile", spec.profile]
    return args


def rerun_command(
    ledger: Ledger, failed_keys: Sequence[str], context_args: Sequence[str] = ()
) -> str:
    """``dbxdec backfill JOB --keys a,b ...`` rerunning exactly ``failed_keys`` (beyond
    :data:`MAX_LISTED_KEYS`: ``--rerun failed --start FIRST --end LAST``)."""
    options = ledger.options
    args = ["dbxdec", "backfill", ledger.job, *context_args]
    if len(failed_keys) <= MAX_LISTED_KEYS:
        args += ["--keys", ",".join(failed_keys)]
    else:
        ordered = sorted(failed_keys)
        args += ["--rerun", "failed", "--start", ordered[0], "--end", ordered[-1]]
    args += _connection_args(ledger)
    if options.batch_auto:
        args += ["--batch-size", "auto"]
        if options.target_run_seconds != default_of("target_run_seconds"):
            args += ["--target-run-length", f"{options.target_run_seconds:g}s"]
    elif options.batch_size > 1:
        args += ["--batch-size", str(options.batch_size)]
    if options.exact:
        args.append("--exact")
    if options.force_rewrite:
        args.append("--force-rewrite")
    if not options.checks:
        args.append("--no-checks")
    if options.tasks:
        args += ["--tasks", options.tasks]
    for name, value in sorted(options.params.items()):
        args += ["--param", f"{name}={value}"]
    args += ["--max-concurrent", str(options.max_concurrent)]
    if options.retries:
        args += ["--retries", str(options.retries)]
    if options.retry_for is not None:
        args += ["--retry-for", f"{options.retry_for:g}s"]
    return shlex.join(args)


def resume_command(ledger: Ledger, context_args: Sequence[str] = ()) -> str:
    """``dbxdec backfill --resume ID``."""
    return shlex.join(["dbxdec", "backfill", *context_args, "--resume", ledger.id])
