"""The partitions a read or a write covers: keys, their windows and merged spans."""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import BackfillDef, TimeWindow


@dataclass(frozen=True, slots=True)
class KeyScope:
    """The backfill keys a read or write covers: ``keys`` (inclusive, ordered), or the whole
    table (``all_partitions``, ``keys`` empty). Without a backfill definition it is empty and
    not ``bounded``.

    Example:
        >>> from databricks_bundle_decorators.backfill import DailyBackfill
        >>> scope = KeyScope(DailyBackfill("2024-01-01"), ("2024-01-01", "2024-01-02"))
        >>> [str(w.start) for w in scope.spans()]
        ['2024-01-01T00:00:00Z']
    """

    backfill: BackfillDef | None
    keys: tuple[str, ...] = ()
    all_partitions: bool = False
    _windows: tuple[TimeWindow, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @classmethod
    def everything(cls, backfill: BackfillDef | None) -> KeyScope:
        """Every partition of the table."""
        return cls(backfill, (), all_partitions=True)

    @property
    def bounded(self) -> bool:
        """Whether the scope restricts rows to ``keys``."""
        return self.backfill is not None and not self.all_partitions

    @property
    def is_time_based(self) -> bool:
        return self.backfill is not None and self.backfill.is_time_based

    def windows(self) -> tuple[TimeWindow, ...]:
        """The half-open window of every key (empty for static keys)."""
        if self._windows is None:
            backfill = self.backfill
            timed = backfill is not None and backfill.is_time_based
            windows = [backfill.window(key) for key in self.keys] if timed and backfill else []
            object.__setattr__(self, "_windows", tuple(w for w in windows if w is not None))
        assert self._windows is not None
        return self._windows

    def spans(self) -> tuple[TimeWindow, ...]:
        """The windows with touching neighbours merged: a 30-day range is one span."""
        merged: list[TimeWindow] = []
        for window in sorted(self.windows(), key=lambda w: w.start):
            if merged and merged[-1].end >= window.start:
                last = merged[-1]
                merged[-1] = TimeWindow(last.start, max(last.end, window.end))
            else:
                merged.append(window)
        return tuple(merged)

    def describe(self) -> str:
        """The scope for messages, e.g. ``key 2024-01-01, window [2024-01-01T00:00:00Z, ...)``."""
        if self.all_partitions:
            return "all partitions"
        if not self.keys:
            return "no keys"
        if len(self.keys) == 1:
            keys = f"key {self.keys[0]}"
        elif len(self.keys) <= 4:
            keys = f"keys {', '.join(self.keys)}"
        else:
            keys = f"keys {self.keys[0]} .. {self.keys[-1]} ({len(self.keys)} keys)"
        spans = self.spans()
        if not spans:
            return keys
        shown = ", ".join(f"[{span.start}, {span.end})" for span in spans[:3])
        more = f" and {len(spans) - 3} more" if len(spans) > 3 else ""
        label = "window" if len(spans) == 1 else "windows"
        return f"{keys}, {label} {shown}{more}"
