"""The backfill ledger: one SQLite database per backfill, written on every change.

``<project root>/.dbxdec/backfills/<id>.sqlite`` holds the plan, each slice's attempts
(idempotency token, run id, state, timings, error) and how to reach the backend (host,
profile, job id -- never a credential). An attempt is recorded *before* its run is
submitted, so a launcher killed at any point resumes by re-submitting the same token,
which the Jobs API answers with the run it already created. A save writes only the
slices that changed (:mod:`.ledger_store`: how, and why SQLite); older ``<id>.json``
ledgers still load.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from ...backfill.wire import BACKFILL_FULL_REFRESH_PARAM, keys_label
from ...errors import LocalStateProblem, UsageError, did_you_mean
from ..plan.pacing import SchedulerOptions
from ..plan.plan import BackfillPlan
from .ledger_ids import attempt_token as attempt_token
from .ledger_ids import new_backfill_id as new_backfill_id
from .ledger_store import LedgerStore, SliceStore, backfill_ids, ledger_file, read_ledger_data, why
from .ledger_store import ledger_dir as ledger_dir
from .local_state import one_line, os_reason

AttemptState = Literal["submitting", "running", "succeeded", "failed", "canceled", "rejected"]
SliceState = Literal["pending", "submitting", "running", "succeeded", "failed", "canceled"]
LedgerState = Literal["running", "succeeded", "failed", "interrupted"]
BackendKind = Literal["databricks", "local"]

LEDGER_VERSION = 1
_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,150}")


@dataclass(frozen=True, slots=True)
class Attempt:
    """One submission of a slice. Times are seconds since the epoch.

    ``submitted_at`` is the launcher's; ``started_at`` and ``ended_at`` are the run's own
    (the backend's record) when known, else ``ended_at`` is when the launcher saw the end.
    ``rejected``: the backend refused the submission, so no run exists.
    """

    number: int
    token: str
    state: AttemptState = "submitting"
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
        if not self.keys and self.parameters.get(BACKFILL_FULL_REFRESH_PARAM, "")[:5] == "swap:":
            return "full-refresh swap"
        return keys_label(self.keys)

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def state(self) -> SliceState:
        last = self.last
        if last is None:
            return "pending"
        return "failed" if last.state == "rejected" else last.state

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


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """The user's choices, kept to build the rerun and resume commands."""

    max_concurrent: int = 4
    retries: int = 0
    retry_delay: float = 10.0
    retry_for: float | None = None  # --retry-for in seconds; absent from older ledgers
    halt_on_error: bool = False
    exact: bool = False
    batch_size: int = 1
    order: str = "forward"
    final_sync: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    canary: int = 0  # absent from ledgers written before --canary
    pause_schedule: bool = False  # absent from ledgers written before --pause-schedule
    force_rewrite: bool = False  # absent from ledgers written before --force-rewrite
    full_refresh: bool = False  # absent from ledgers written before --full-refresh
    batch_auto: bool = False  # --batch-size auto (batch_size: the latest choice); absent
    target_run_seconds: float = 900.0  # from older ledgers; plan.request.DEFAULT_TARGET_SECONDS
    tasks: str = ""  # --tasks/--skip-tasks as backfill_tasks ("": every task); absent before
    checks: bool = True  # False: --no-checks (backfill_checks=off); absent before
    diff_gate: float | None = None  # --diff-gate percent (see .diff_gate); absent before

    def for_scheduler(
        self, poll_interval: float, resend_after: float | None = None
    ) -> SchedulerOptions:
        """The scheduler's pacing for these choices, polling every ``poll_interval`` s
        (``resend_after``: see :class:`.pacing.SchedulerOptions`)."""
        return SchedulerOptions(
            max_concurrent=self.max_concurrent,
            retries=self.retries,
            retry_for=self.retry_for,
            retry_delay=self.retry_delay,
            halt_on_error=self.halt_on_error,
            poll_interval=poll_interval,
            max_poll_interval=max(poll_interval, 15.0),
            canary=self.canary,
            resend_after=resend_after,
            diff_gate=self.diff_gate,
        )


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
        state: LedgerState = "running",
        store: SliceStore | None = None,
    ) -> None:
        """``store``: where saves go (default: the SQLite database at ``path``)."""
        self.path = path
        self.id = backfill_id
        self.job = job
        self.backend = backend
        self.options = options
        self._slices = slices
        self.created_at = time.time() if created_at is None else created_at
        self.updated_at = self.created_at
        self.state: LedgerState = state
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

    def set_state(self, state: LedgerState) -> None:
        if state != self.state:
            self.state = state
            self.dirty = True

    def counts(self) -> dict[str, int]:
        """Slices per state (every state present, zero included)."""
        return {state: sum(r.state == state for r in self.slices) for state in get_args(SliceState)}

    def _header(self) -> dict[str, Any]:
        return {
            "version": LEDGER_VERSION,
            "id": self.id,
            "job": self.job,
            "state": self.state,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "backend": asdict(self.backend),
            "options": {**asdict(self.options), "params": dict(self.options.params)},
        }

    def to_json(self) -> dict[str, Any]:
        return {**self._header(), "slices": [_slice_json(r) for r in self.slices]}

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
                tuple(
                    Attempt(**{**a, "checks": tuple(a.get("checks", ()))}) for a in s["attempts"]
                ),
                s.get("job"),  # absent before --downstream: the ledger's job
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
        )
        ledger.updated_at = float(data.get("updated_at", ledger.created_at))
        ledger.dirty = False
        ledger._changed.clear()
        return ledger

    def save(self) -> None:
        """Commit the header and the slices changed since the last save in one transaction,
        synced before this returns (an older ``.json`` ledger is written whole, then removed).

        Raises:
            LocalStateProblem: the database cannot be written (full disk, unwritable
                folder); what is on disk is the last saved ledger, whole.
        """
        self.updated_at = time.time()
        if self._store is None:
            self._store = self._bound or LedgerStore(self.path)
            self._changed.update(range(len(self._slices)) if self._store.legacy else ())
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
    """The ledger in ``path`` (``<id>.sqlite``; an older ``<id>.json`` until it is migrated).

    Raises:
        LocalStateProblem: the file cannot be read or is not a ledger (damaged); the
            message says how to go on without it.
    """
    path = ledger_file(path)  # the file read, named if it cannot be
    try:
        return Ledger.from_json(*read_ledger_data(path))
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


def job_part(ledger: Ledger, job: str) -> Ledger:
    """``ledger`` as a one-job ledger of ``job`` (``--downstream``: only ``job``'s slices,
    numbered from 0; read it, never save it); ``ledger`` itself when all are ``job``'s."""
    mine = [r for r in ledger.slices if (r.job or ledger.job) == job]
    if len(mine) == len(ledger.slices) and ledger.job == job:
        return ledger
    slices = [replace(r, index=i, job=None, waits_for=()) for i, r in enumerate(mine)]
    data = {**ledger.to_json(), "job": job, "slices": [_slice_json(r) for r in slices]}
    return Ledger.from_json(ledger.path, data)
