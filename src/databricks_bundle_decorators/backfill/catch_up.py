"""``CatchUp``: a scheduled run heals the gap since the last done key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Since = Literal["last_present", "last_success"]
_SINCE = ("last_present", "last_success")


@dataclass(frozen=True, slots=True)
class CatchUp:
    """Self-healing schedule: a scheduled run processes every key after the last done key up to
    the current key, oldest first, at most ``max_keys``, each with its own lookback.

    Example:
        ``DailyBackfill("2024-01-01", catch_up=CatchUp(max_keys=7))``: after three failed
        days and one skipped, the next run processes exactly those 4 keys.

    Args:
        since: ``"last_present"``: the last key present in the job's output tables.
            ``"last_success"``: the key of the job's newest successful run, from its run
            history (``jobs/runs/list``, kept 60 days; job parameter ``dbxdec_job_id``), read
            with the run's own credentials, else ``secret_scope``'s.
        max_keys: At most this many keys per run; ``None``: no cap.
        state_table: Delta table holding each run's keys (every task and repair processes
            the same); default ``dbxdec_trigger_state`` beside the first output table.
        secret_scope: The scope holding the OAuth ``client_id`` and ``client_secret`` of the
            job's service principal, for ``since="last_success"``.

    Raises:
        ValueError: a bad value (one line naming it).
    """

    since: Since = "last_present"
    max_keys: int | None = None
    state_table: str | None = None
    secret_scope: str | None = None

    def __post_init__(self) -> None:
        if self.since not in _SINCE:
            raise ValueError(
                f"CatchUp: since={self.since!r} must be 'last_present' or 'last_success'"
            )
        cap = self.max_keys
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ValueError(f"CatchUp: max_keys={cap!r} must be a positive int (or None)")
        if self.state_table is not None and self.state_table.count(".") != 2:
            raise ValueError(
                f"CatchUp: state_table={self.state_table!r} must be catalog.schema.table"
            )
        scope = self.secret_scope
        if scope is not None and (not isinstance(scope, str) or not scope.strip()):
            raise ValueError(f"CatchUp: secret_scope={scope!r} must be a non-empty string")
        if scope is not None and self.since != "last_success":
            raise ValueError("CatchUp: secret_scope goes with since='last_success' only")
