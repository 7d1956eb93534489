"""The order and pages of the emulated ``jobs/runs/list``.

The Jobs API reference documents the order of ``runs/list`` as newest first, by start
time ("List runs in descending order by start time", the ``list_runs`` docstring of
databricks-sdk-py, ``databricks/sdk/service/jobs.py``; "Lists runs from most recently
started to least", https://databricks.github.io/sdk-js/api/interfaces/_databricks_sdk-jobs.v2.ListRunsRequest.html)
or, in later releases of the reference, by end time ("List runs in descending order by
end time. If a run has not finished, it falls back to start time",
https://docs.databricks.com/api/jobs/v2/list-runs). Never by run id: a run id is an
opaque identifier, so code that stops a scan at a run id is wrong on either order.

The emulator lists by either documented order (start time by default). Runs with the
same time (epoch milliseconds) are listed lowest run id first: the documents say nothing
about ties, and this is the least convenient answer for code that assumes id order.
A page token is a cursor in the chosen order (the sort key of the last run of a page),
so a run whose key changes between two pages (a run that ends, in end-time order) may
move to a page already read: the real service promises nothing better.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Literal, get_args

from ._emulator_records import RunRecord, invalid

__all__ = ["RUNS_LIST_ORDERS", "RunsListOrder", "SortKey", "list_order", "page_runs"]

RunsListOrder = Literal["start_time", "end_time"]
RUNS_LIST_ORDERS: tuple[str, ...] = get_args(RunsListOrder)

SortKey = tuple[int, int]  # (-time in epoch ms, run id): ascending = newest first


def list_order(order: str, epoch_ms: Callable[[float], int]) -> Callable[[RunRecord], SortKey]:
    """The sort key of ``order`` (a :data:`RUNS_LIST_ORDERS` value): ascending = listed first."""
    if order not in RUNS_LIST_ORDERS:
        raise ValueError(f"runs/list order must be one of {RUNS_LIST_ORDERS}, got {order!r}")

    def key(run: RunRecord) -> SortKey:
        # the time runs/get renders as start_time is r.created (see _emulator_render)
        at = run.ended if order == "end_time" and run.ended is not None else run.created
        return (-epoch_ms(at), run.run_id)

    return key


def page_runs(
    runs: list[RunRecord],
    order: Callable[[RunRecord], SortKey],
    limit: int,
    offset: int | None,
    page_token: str | None,
) -> tuple[list[RunRecord], str | None]:
    """One page of ``runs`` (sorted by ``order``) and the next page's token, if any."""
    start = 0
    if page_token:
        after = _decode(page_token)
        start = next((i for i, run in enumerate(runs) if order(run) > after), len(runs))
    elif offset:
        if offset < 0:
            raise invalid(f"offset must not be negative, got {offset}")
        start = offset
    page = runs[start : start + limit]
    more = start + limit < len(runs)
    return page, _encode(order(page[-1])) if more and page else None


def _encode(last: SortKey) -> str:
    return base64.urlsafe_b64encode(f"runs:{last[0]}:{last[1]}".encode()).decode().rstrip("=")


def _decode(token: str) -> SortKey:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        kind, when, run_id = raw.split(":")
        if kind != "runs":
            raise ValueError(raw)
        return (int(when), int(run_id))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid(f"Invalid page_token: {token!r}") from None
