"""Which finished runs a status poll reads: ``completed_only=true&start_time_from=B`` pages,
``B`` at or before every awaited run's start on the workspace's clock (runs/list is ordered
by start or end time, never run id: https://docs.databricks.com/api/jobs/v2/list-runs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...runtime.triggers.run_history import RUNS_LIST_PAGE

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import BaseRun

MARGIN_MS = 2_000  # small steps of this machine's clock, and millisecond rounding
WINDOW_TARGET = 2 * RUNS_LIST_PAGE  # finished runs a window should hold
POLL_PAGES = 3  # pages a poll reads at most: the target and a spare page


@dataclass(frozen=True, slots=True)
class Window:
    """What one poll reads: ``start_from`` (epoch ms, workspace clock) covering the runs in
    ``covered``; ``stragglers`` started before it and ``unknown`` starts, to look up alone.
    """

    start_from: int | None
    covered: frozenset[int]
    stragglers: frozenset[int]
    unknown: frozenset[int]


class RunStarts:
    """Lower bounds of run starts on the workspace clock, and the finished runs seen
    (thread-safe).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sent: dict[int, float] = {}  # run id -> local time before its run-now (s)
        self._exact: dict[int, int] = {}  # run id -> start_time the workspace showed (ms)
        self._skew: int | None = None  # lower bound of workspace clock - local clock (ms)
        self._finished: dict[int, int] = {}  # finished run seen -> its start_time (ms)

    def submitted(self, run_id: int, sent_at: float) -> None:
        """``run_id`` was answered to a run-now sent at local time ``sent_at``."""
        with self._lock:
            self._sent.setdefault(run_id, sent_at)

    @property
    def skew_known(self) -> bool:
        """Whether an answer of the workspace has bounded its clock's skew yet."""
        with self._lock:
            return self._skew is not None

    def started(self, run_id: int, start_ms: int | None, read_after: float) -> None:
        """``runs/get``, answered by local time ``read_after``, showed ``run_id`` started at
        ``start_ms`` (0/None: not yet).
        """
        if start_ms:
            with self._lock:
                self._exact[run_id] = start_ms
                self._sample(start_ms, read_after)

    def finished(self, run_id: int, start_ms: int, end_ms: int, read_after: float) -> None:
        """A finished run listed in an answer that arrived by local time ``read_after``."""
        with self._lock:
            self._finished[run_id] = start_ms
            self._sample(max(start_ms, end_ms), read_after)

    def _sample(self, server_ms: int, read_after: float) -> None:
        sample = server_ms - int(read_after * 1000)
        self._skew = sample if self._skew is None else max(self._skew, sample)

    def _bound(self, run_id: int) -> int | None:
        """A time (epoch ms, workspace clock) at or before ``run_id``'s start, if known."""
        exact = self._exact.get(run_id)
        if exact is not None:
            return exact - MARGIN_MS
        sent = self._sent.get(run_id)
        if sent is None or self._skew is None:
            return None
        return int(sent * 1000) + self._skew - MARGIN_MS

    def window(self, wanted: Collection[int]) -> Window:
        """The window for a poll of ``wanted``: the youngest runs whose window holds at most
        :data:`WINDOW_TARGET` finished runs seen (at least the youngest).
        """
        with self._lock:
            bounds = {run: self._bound(run) for run in wanted}
            unknown = frozenset(run for run, b in bounds.items() if b is None)
            known = sorted(((b, run) for run, b in bounds.items() if b is not None), reverse=True)
            seen = sorted(self._finished.values(), reverse=True)
            covered: list[int] = []
            start_from: int | None = None
            for bound, run in known:
                inside = sum(1 for s in seen if s >= bound)  # seen is short: a few pages
                if covered and inside > WINDOW_TARGET:
                    break
                covered.append(run)
                start_from = bound
            stragglers = frozenset(run for _, run in known) - set(covered)
            self._forget_before(min((b for b, _ in known), default=None))
            return Window(start_from, frozenset(covered), stragglers, unknown)

    def _forget_before(self, oldest: int | None) -> None:
        """Drop finished runs no window will hold again (the wanted runs only get younger)."""
        if oldest is None:
            return
        for run, start in list(self._finished.items()):
            if start < oldest:
                del self._finished[run]

    def forget(self, run_ids: Iterable[int]) -> None:
        """Runs reported finished: their starts are needed no more."""
        with self._lock:
            for run in run_ids:
                self._sent.pop(run, None)
                self._exact.pop(run, None)


def read_window(
    client: WorkspaceClient, job_id: int, start_from: int, starts: RunStarts, pages: int
) -> tuple[dict[int, BaseRun], bool]:
    """Every finished run of ``job_id`` started at or after ``start_from`` (epoch ms), up to
    ``pages`` pages, each recorded in ``starts``; and whether that was the whole window.
    """
    listed: dict[int, BaseRun] = {}
    runs = client.jobs.list_runs(
        job_id=job_id, completed_only=True, start_time_from=start_from, limit=RUNS_LIST_PAGE
    )
    for seen, run in enumerate(runs, start=1):
        run_id = int(run.run_id or 0)
        starts.finished(run_id, run.start_time or 0, run.end_time or 0, time.time())
        listed[run_id] = run
        if seen >= pages * RUNS_LIST_PAGE:
            return listed, False
    return listed, True
