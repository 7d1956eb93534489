"""A backfill's options: one record from the CLI to the scheduler, each default once; the
ledger keeps the choices, each session sets its own pacing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from .plan import Order

LOCAL_CONCURRENT = 1
"""Runs in flight at most locally unless ``--max-concurrent`` is given."""

_SESSION: Mapping[str, bool] = {"session": True}  # not kept in the ledger


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """How a backfill runs: its plan's choices and its pacing.

    Attributes:
        retries, retry_delay, max_retry_delay: Extra attempts per failed slice, and the
            doubling delay before each.
        retry_for: Seconds from a slice's first attempt within which a retry may start
            (:mod:`..policy.retry_budget`).
        exact, batch_size, order, final_sync, params: The plan (:func:`.plan.build_plan`);
            ``batch_auto``: ``--batch-size auto``, aiming at ``target_run_seconds``.
        canary: The first slices that run alone before the rest (:mod:`..policy.canary`).
        diff_gate: The most (percent) a canary's measures may move (:mod:`..backends.diff_gate`).
        tasks: ``--tasks``/``--skip-tasks`` encoded (``""``: every task).
        poll_interval, max_poll_interval: Gaps between status polls
            (:mod:`..policy.poll_policy`).
        submit_attempts: Tries to reach the backend for one submission before launching stops.
        resend_after: Overtake an unanswered status poll after this many seconds (``0``:
            never; ``None``: adaptive; :class:`..policy.poll_policy.StatusPoller`).
    """

    max_concurrent: int = 4
    retries: int = 0
    retry_delay: float = 10.0
    retry_for: float | None = None
    halt_on_error: bool = False
    exact: bool = False
    batch_size: int = 1
    order: Order = "forward"
    final_sync: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    canary: int = 0
    pause_schedule: bool = False
    force_trigger_pause: bool = False
    force_rewrite: bool = False
    full_refresh: bool = False
    batch_auto: bool = False
    target_run_seconds: float = 900.0
    tasks: str = ""
    checks: bool = True
    diff_gate: float | None = None
    max_retry_delay: float = field(default=600.0, metadata=_SESSION)
    poll_interval: float = field(default=1.0, metadata=_SESSION)
    max_poll_interval: float = field(default=15.0, metadata=_SESSION)
    submit_attempts: int = field(default=4, metadata=_SESSION)
    resend_after: float | None = field(default=None, metadata=_SESSION)

    def paced(self, pacing: Pacing) -> LaunchOptions:
        """These options with what ``pacing`` sets (``None``: kept)."""
        return replace(
            self,
            retries=self.retries if pacing.retries is None else pacing.retries,
            retry_delay=self.retry_delay if pacing.retry_delay is None else pacing.retry_delay,
            retry_for=self.retry_for if pacing.retry_for is None else pacing.retry_for,
            halt_on_error=pacing.halt_on_error or self.halt_on_error,
            poll_interval=pacing.poll_interval,
            resend_after=pacing.resend_after,
        )

    def to_json(self) -> dict[str, Any]:
        """The choices the ledger keeps (``LaunchOptions(**data)`` reads them back)."""
        kept = {f.name for f in fields(self) if not f.metadata.get("session")}
        data = {name: value for name, value in asdict(self).items() if name in kept}
        return {**data, "params": dict(self.params)}


def default_of(name: str) -> Any:
    """The default of the option ``name`` (for help texts and a new backfill's values)."""
    return next(f.default for f in fields(LaunchOptions) if f.name == name)


@dataclass(frozen=True, slots=True)
class Pacing:
    """How fast a backfill launches and retries: ``None`` is the default for a new backfill
    (:class:`LaunchOptions`'s; locally :data:`LOCAL_CONCURRENT` runs) and the ledger's value
    on ``--resume``; ``halt_on_error`` can only be switched on.
    """

    max_concurrent: int | None = None
    retries: int | None = None
    retry_delay: float | None = None
    retry_for: float | None = None
    halt_on_error: bool = False
    poll_interval: float = default_of("poll_interval")
    resend_after: float | None = None

    def cap(self, local: bool) -> int:
        """Runs in flight at most for a new backfill: ``max_concurrent`` or the default."""
        return self.max_concurrent or (
            LOCAL_CONCURRENT if local else int(default_of("max_concurrent"))
        )


def backoff(options: LaunchOptions, failures: int) -> float:
    """Seconds before retry number ``failures`` (1-based): doubling, capped."""
    return float(min(options.retry_delay * 2 ** (failures - 1), options.max_retry_delay))
