"""What a large plan amounts to, for a person: its keys as contiguous spans, and what the
selection left out and why (ten years of hourly keys are 87,662 runs).

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
    """The longest runs of consecutive ``universe`` keys that are all in ``keys``."""
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
    """How many keys ``--start``/``--end`` or ``--keys`` selected, the definition's keys from
    the first to the last, and why a filter left some out (``""``: none).
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
