"""The key of a job's newest successful run, read from its run history inside the job:
``CatchUp(since="last_success")``.

``jobs/runs/list`` (``completed_only``, the job id from ``dbxdec_job_id``) is read
through the SDK, page by page, at most 25 runs a page (the ``list_runs`` docstring of
databricks-sdk-py). Its order is documented as newest first by start time (the same
docstring) or by end time (https://docs.databricks.com/api/jobs/v2/list-runs), so
"newest" is the latest start (ties: the higher run id) and the scan stops, in either
order, once a listed run *ended* before the best successful start found.

A run counts when it ended ``SUCCESS`` and ran the whole job for the schedule (not an
undo, presence, measure or full-refresh run, a task subset or a backfill's run). Its key
is the last key it was given, else the last key its catching-up run stored, else the
key current at its logical time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ...backfill.time_backfill import TimeBackfill
from ...backfill.wire import (
    BACKFILL_RUN_TIME_PARAM,
    ORDER_PARAM,
    KeyRange,
    TaskOrder,
    order_in,
    parse_run_time,
)
from .trigger_state import StoredRun

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import BaseRun

RUNS_LIST_PAGE = 25
"""The largest ``runs/list`` page (``limit``: 1..25)."""


@dataclass(frozen=True, slots=True)
class ListedRun:
    """A finished run as ``runs/list`` showed it: id, start (epoch ms), job parameters."""

    run_id: int
    start_ms: int
    parameters: Mapping[str, str]


def run_parameters(run: BaseRun) -> dict[str, str]:
    """A listed run's job parameters by name: the value it was given, else the job's
    default (``runs/list`` answers both, databricks-sdk-py ``jobs.JobParameter``)."""
    return {
        p.name: p.value if p.value is not None else (p.default or "")
        for p in run.job_parameters or []
        if p.name
    }


def newest_success(client: WorkspaceClient, job_id: int) -> ListedRun | None:
    """The newest successful run of ``job_id`` that counts (``None``: there is none)."""
    best: ListedRun | None = None
    runs = client.jobs.list_runs(job_id=job_id, completed_only=True, limit=RUNS_LIST_PAGE)
    for run in runs:
        start = int(run.start_time or 0)
        end = max(int(run.end_time or 0), start)
        if best is not None and end < best.start_ms:
            break  # every run listed from here on started before `best` (either order)
        if not _succeeded(run):
            continue
        parameters = run_parameters(run)
        if not _counts(parameters):
            continue
        run_id = int(run.run_id or 0)
        if best is None or (start, run_id) > (best.start_ms, best.run_id):
            best = ListedRun(run_id, start, parameters)
    return best


def run_key(backfill: TimeBackfill, run: ListedRun, stored: StoredRun | None) -> str | None:
    """The last key ``run`` processed; ``None`` when it is no key of ``backfill``."""
    try:
        given = KeyRange.from_params(run.parameters)
        if given is not None:
            backfill.validate_key(given.last)
            return given.last
        if stored is not None and stored.written:
            return stored.written[-1]
        try:
            at = parse_run_time(run.parameters.get(BACKFILL_RUN_TIME_PARAM, ""), tz=backfill.tz)
        except ValueError:
            at = None  # unrendered or foreign: its start is its logical time
        at = at or datetime.fromtimestamp(run.start_ms / 1000, tz=timezone.utc)
        return backfill.current_key(now=at)
    except ValueError:
        return None


def _succeeded(run: Any) -> bool:
    """``result_state`` SUCCESS (``state``), else termination code SUCCESS (``status``):
    the SDK documents both (``jobs.RunState``, ``jobs.RunStatus``)."""
    state = getattr(run.state, "result_state", None)
    if state is not None:
        return bool(getattr(state, "value", state) == "SUCCESS")
    details = getattr(run.status, "termination_details", None)
    code = getattr(details, "code", None)
    return code is not None and getattr(code, "value", code) == "SUCCESS"


def _counts(parameters: Mapping[str, str]) -> bool:
    """Whether a run stands for the schedule: not an undo, presence, measure or full
    refresh run, nor a run of chosen tasks or of a backfill."""
    order = order_in(parameters)
    if order is None:
        return not parameters.get(ORDER_PARAM, "").strip()  # a value that is no order
    if not isinstance(order, TaskOrder) or order.kind != "task":
        return False
    return not (order.tasks or order.backfill_id)
