"""``CatchUp``: a scheduled run heals the gap since the last key that has data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Since = Literal["last_present", "last_success"]


@dataclass(frozen=True, slots=True)
class CatchUp:
    """Self-healing schedule of a time backfill: a scheduled run (no ``backfill_key``)
    processes every key after the last key present in the job's output tables up to the
    current key, oldest first, at most ``max_keys`` (the rest wait for the next run;
    ``dbxdec status`` shows them); each key is read with its own lookback.

    Example:
        ``DailyBackfill("2024-01-01", catch_up=CatchUp(max_keys=7))``: after three failed
        days and one skipped, the next run processes exactly those 4 keys.

    Args:
        since: ``"last_present"`` (from the data). ``"last_success"`` (from run history)
            needs the workspace controller's authentication and is refused for now.
        max_keys: At most this many keys per run; ``None``: no cap.
        state_table: Delta table (``catalog.schema.table``) holding each run's keys, so
            every task and repair of the run processes the same ones; default
            ``dbxdec_trigger_state`` in the schema of the job's first output table.

    Raises:
        ValueError: a bad value (one line naming it).
    """

    since: Since = "last_present"
    max_keys: int | None = None
    state_table: str | None = None

    def __post_init__(self) -> None:
        if self.since == "last_success":
            raise ValueError(
                "CatchUp(since='last_success') reads run history from inside the job and needs "
                "the workspace controller's authentication, which dbxdec does not have yet; use "
                "since='last_present' (from the data)"
            )
        if self.since != "last_present":
            raise ValueError(f"CatchUp: since={self.since!r} must be 'last_present'")
        cap = self.max_keys
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ValueError(f"CatchUp: max_keys={cap!r} must be a positive int (or None)")
        if self.state_table is not None and self.state_table.count(".") != 2:
            raise ValueError(
                f"CatchUp: state_table={self.state_table!r} must be catalog.schema.table"
            )
