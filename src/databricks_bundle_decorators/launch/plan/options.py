"""A backfill's options: one record from the CLI to the scheduler, each default once.

The ledger keeps the user's choices (:meth:`LaunchOptions.to_json`) to resume the
backfill and to print its rerun and resume commands; the pacing of polls and resends is
chosen anew by each session that runs it (a launcher, a resume, a controller run).
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
        max_concurrent: Runs in flight at most (locally: :data:`LOCAL_CONCURRENT`).
        retries: Extra attempts per slice after a failed run.
        retry_delay: Seconds before the first retry; doubles per retry.
        retry_for: Seconds from a slice's first attempt within which a retry may
            start, back-off included (``None``: no limit); see :mod:`..policy.retry_budget`.
        halt_on_error: Stop launching once a slice has failed for good.
        exact, batch_size, order, final_sync, params: The plan (see :func:`.plan.build_plan`);
            ``batch_auto``: ``--batch-size auto`` (``batch_size``: the latest choice),
            aiming at runs of ``target_run_seconds``.
        canary: The first this many slices run alone; the rest launch only once they
            have all succeeded (``0``: off). See :mod:`..policy.canary`.
        diff_gate: With canaries, the most a canary key's row count may move (percent)
            before the backfill stops (``None``: off). See :mod:`..backends.diff_gate`.
        pause_schedule, force_trigger_pause, force_rewrite, full_refresh: As
            ``--pause-schedule``, ``--force-trigger-pause``, ``--force-rewrite``,
            ``--full-refresh``.
        tasks: ``--tasks``/``--skip-tasks`` as ``backfill_tasks`` (``""``: every task).
        checks: ``False``: ``--no-checks`` (``backfill_checks=off``).
        max_retry_delay: Upper bound of the retry delay.
        poll_interval: The longest gap between status polls while runs are due to
            end; shorter runs are polled sooner (see :mod:`..policy.poll_policy`).
        max_poll_interval: The longest gap between status polls.
        submit_attempts: Tries to reach the backend for one submission before the
            backfill stops launching (the attempt stays open for ``--resume``).
        resend_after: A status poll not answered within this many seconds is
            overtaken by one more (``0``: never; ``None``: a few times the usual
            poll's latency). See :mod:`..policy.status_poller`.
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
        """These options with what ``pacing`` sets (``None``: kept; a new backfill
        starts from this record's defaults, ``--resume`` from its ledger's)."""
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
    """How fast a backfill launches and how it retries.

    ``None`` means the default for a new backfill (:class:`LaunchOptions`'s;
    ``max_concurrent`` locally: :data:`LOCAL_CONCURRENT`) and the ledger's own
    value on ``--resume``. ``halt_on_error`` can only be switched on. ``resend_after``: a
    ``run-now`` or status poll not answered within this many seconds is sent once more
    (``0``: never; ``None``: a few times the usual latency), see :mod:`.overtake`.
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
