"""What a large plan amounts to, for a person: its keys as contiguous spans, and what the
selection left out and why.

A dry run of ten years of hourly keys has 87,662 runs; listing them helps nobody. Its
summary names the spans of consecutive keys it writes (a key range is inclusive at both
ends), how many of the selected keys a rerun or catch-up filter skipped, and the first
and last runs.

Example:
    >>> universe = ["01", "02", "03", "04", "05"]
    >>> [s.label for s in key_spans(universe, {"01", "02", "04"})]
    ['01..02', '04']
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ...backfill.base import BackfillDef
from .plan import selected_keys
from .request import BackfillRequest


@dataclass(frozen=True, slots=True)
class KeySpan:
    """Consecutive keys of a definition, from ``first`` to ``last`` (inclusive)."""

    first: str
    last: str
    count: int

    @property
    def label(self) -> str:
        """``"2024-01-01"`` or ``"2024-01-01..2024-01-07"``."""
        return self.first if self.count == 1 else f"{self.first}..{self.last}"


def key_spans(universe: Sequence[str], keys: Collection[str]) -> list[KeySpan]:
    """The longest runs of consecutive ``universe`` keys (a definition's keys, in its
    order) that are all in ``keys``; keys outside ``universe`` are not counted."""
    spans: list[KeySpan] = []
    first: str | None = None
    last = ""
    count = 0
    for key in universe:
        if key in keys:
            if first is None:
                first, count = key, 0
            last, count = key, count + 1
        elif first is not None:
            spans.append(KeySpan(first, last, count))
            first = None
    if first is not None:
        spans.append(KeySpan(first, last, count))
    return spans


@dataclass(frozen=True, slots=True)
class PlanSelection:
    """The keys a plan was chosen from, before any rerun or catch-up filter.

    Attributes:
        selected: How many keys ``--start``/``--end`` (or ``--keys``) selected.
        universe: The definition's keys from the first selected key to the last.
        filter: Why selected keys were left out (``--rerun failed: ...``); ``""``
            when none was applied.
    """

    selected: int
    universe: list[str]
    filter: str


def plan_selection(backfill: BackfillDef, request: BackfillRequest) -> PlanSelection:
    """What ``request`` selected of ``backfill``'s keys, and the filter it applies."""
    chosen = selected_keys(backfill, request.start, request.end, request.keys)
    universe = backfill.keys(chosen[0], chosen[-1]) if request.keys and chosen else chosen
    return PlanSelection(len(chosen), universe, selection_filter(request))


def selection_filter(request: BackfillRequest) -> str:
    """Why ``request`` leaves selected keys out, in its own options' terms; ``""``."""
    if request.catchup and request.by == "data":
        return "catch-up --by data: only keys whose partitions are missing or empty"
    if request.catchup:
        return "catch-up: only keys without a succeeded or running run"
    if request.rerun == "failed":
        return "--rerun failed: only keys whose latest run failed"
    if request.rerun == "missing":
        return "--rerun missing: only keys that never ran"
    return ""
