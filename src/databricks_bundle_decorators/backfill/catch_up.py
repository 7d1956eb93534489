"""``CatchUp``: a scheduled run heals the gap since the last key that has data (or since
the key of the job's newest successful run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Since = Literal["last_present", "last_success"]
_SINCE = ("last_present", "last_success")


@dataclass(frozen=True, slots=True)
class CatchUp:
    """Self-healing schedule of a time backfill: a scheduled run (no ``backfill_key``)
    processes every key after the last done key up to the current key, oldest first, at
    most ``max_keys`` (the rest wait for the next run; ``dbxdec status`` shows them); each
    key is read with its own lookback.

    Example:
        ``DailyBackfill("2024-01-01", catch_up=CatchUp(max_keys=7))``: after three failed
        days and one skipped, the next run processes exactly those 4 keys.

    Args:
        since: ``"last_present"``: the last key present in the job's output tables (from
            the data). ``"last_success"``: the key of the job's newest successful run,
            read from its run history (``jobs/runs/list``) inside the job run with the
            run's own credentials (the SDK's default authentication), else those of the
            service principal in ``secret_scope``; the job declares the job parameter
            ``dbxdec_job_id`` (``{{job.id}}``) for it. Run history is kept 60 days: with
            no successful run in it, only the current key is run.
        max_keys: At most this many keys per run; ``None``: no cap.
        state_table: Delta table (``catalog.schema.table``) holding each run's keys, so
            every task and repair of the run processes the same ones; default
            ``dbxdec_trigger_state`` in the schema of the job's first output table.
        secret_scope: With ``since="last_success"``: the secret scope holding the OAuth
            ``client_id`` and ``client_secret`` of the service principal the job runs as,
            used when the SDK's default authentication finds no credentials.

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
