"""What a status poll reads, so that its cost follows what ended, in any ``runs/list`` order.

A poll lists every page of the job's *active* runs (``active_only=true``: "QUEUED, PENDING,
RUNNING, or TERMINATING", https://docs.databricks.com/api/jobs/v2/list-runs). The runs in
flight bound that list (the cap, plus what is queued), whatever the backfill's size. An
awaited run absent from it has left the active set (or was listed out of place): for those
runs alone, completed pages are read (started since the oldest of them, their start times
known from earlier active pages), one page more than they fill at most, then ``runs/get``
for any still unaccounted. The
documents order ``runs/list`` by start time or by end time, never by run id; nothing here
depends on the order: an absence only costs a lookup.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from ...runtime.triggers.run_history import RUNS_LIST_PAGE

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import BaseRun

LIST_PATH = "/api/2.2/jobs/runs/list"
T = TypeVar("T")
Call = Callable[[Callable[[], T]], T]
"""How each request is sent: a function that calls its argument (resending it when slow)."""


@dataclass(frozen=True, slots=True)
class Listed:
    """One poll's reading of the job's runs: ``active`` (run id -> start time, epoch ms) and
    ``ended`` (awaited runs found in a completed page, by id)."""

    active: dict[int, int]
    ended: dict[int, BaseRun]


class RunListing:
    """Reads the job's runs for :meth:`~.databricks_backend.DatabricksBackend.poll`, and
    remembers what the polls learnt of each awaited run (thread-safe): its start time seen
    in an active page, and when ``runs/get`` found it active though no page listed it."""

    def __init__(self, client: WorkspaceClient, job_id: int, call: Call[Any]) -> None:
        self._client = client
        self._job_id = job_id
        self._call = call
        self._lock = threading.Lock()
        self._starts: dict[int, int] = {}  # awaited run -> its start_time (ms)
        self._unlisted: dict[int, float] = {}  # active run no page listed -> when (monotonic)

    def read(self, wanted: Collection[int]) -> Listed:
        """Every active run of the job; then, when two or more runs of ``wanted`` are not
        active, the completed pages (started since the oldest of them, when every one's
        start is known) until they are all found, one page more than they fill at most."""
        active = {run_id: start for run_id, start, _ in self._pages({"active_only": "true"})}
        with self._lock:
            self._starts.update((run, start) for run, start in active.items() if run in wanted)
            left = {run for run in wanted if run not in active}
            starts = [self._starts.get(run) for run in left]
        ended: dict[int, BaseRun] = {}
        if len(left) >= 2:  # one run alone costs one runs/get either way
            query = {"completed_only": "true"}
            if None not in starts:  # else the newest pages: unknown starts cannot bound them
                query["start_time_from"] = str(min(s for s in starts if s is not None))
            budget = math.ceil(len(left) / RUNS_LIST_PAGE) + 1
            for run_id, _, run in self._pages(query, budget):
                if run_id in left:
                    ended[run_id] = run
                    if len(ended) == len(left):
                        break
        return Listed(active, ended)

    def started(self, run_id: int, start_ms: int | None) -> None:
        """``runs/get`` showed ``run_id`` started at ``start_ms`` (0/None: not known)."""
        if start_ms:
            with self._lock:
                self._starts.setdefault(run_id, start_ms)

    def to_look_up(self, run_ids: Iterable[int], now: float, interval: float) -> list[int]:
        """Of ``run_ids`` (unaccounted for by the pages), those to ``runs/get`` at ``now``:
        each not found active-yet-unlisted within the last ``interval`` seconds."""
        with self._lock:
            return sorted(
                run for run in run_ids if now - self._unlisted.get(run, -math.inf) >= interval
            )

    def unlisted(self, run_id: int, now: float) -> None:
        """``runs/get`` found ``run_id`` active at ``now`` though no active page listed it."""
        with self._lock:
            self._unlisted[run_id] = now

    def forget(self, run_ids: Iterable[int]) -> None:
        """Runs reported finished: nothing of them is needed any more."""
        with self._lock:
            for run in run_ids:
                self._starts.pop(run, None)
                self._unlisted.pop(run, None)

    def _pages(
        self, query: dict[str, str], pages: float = math.inf
    ) -> Iterable[tuple[int, int, BaseRun]]:
        """``(run id, start time, run)`` of the job's runs matching ``query``, page by page
        (each page one request through ``call``), up to ``pages`` pages. Not the SDK's
        ``list_runs``: it follows the pages itself, so a resent call would start again
        at the first page, and it cannot stop after a budget of pages."""
        from databricks.sdk.service.jobs import BaseRun

        query = {**query, "job_id": str(self._job_id), "limit": str(RUNS_LIST_PAGE)}
        headers = {"Accept": "application/json"}
        if self._client.config.workspace_id:  # as the SDK's own list_runs sends it
            headers["X-Databricks-Workspace-Id"] = self._client.config.workspace_id
        read = 0
        while read < pages:
            do = self._client.api_client.do  # a page's query is bound now, not at its resend
            answer = self._call(partial(do, "GET", LIST_PATH, query=dict(query), headers=headers))
            read += 1
            for item in answer.get("runs", ()):
                run = BaseRun.from_dict(item)
                yield int(run.run_id or 0), int(run.start_time or 0), run
            token = answer.get("next_page_token")
            if not token:
                return
            query["page_token"] = token
