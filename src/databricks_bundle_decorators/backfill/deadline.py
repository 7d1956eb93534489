"""Freshness deadlines: when each backfill key is due (:class:`Deadline`)."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from whenever import Instant, Time

from .base import BackfillDef
from .cadence import HOURLY
from .quartz import QuartzSchedule
from .time_backfill import TimeBackfill, check_timezone

_TIME_OF_DAY = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}(\.[A-Za-z_][A-Za-z0-9_]{0,254}){2}")
MONITOR_JOB_SUFFIX = "__deadline_monitor"
"""The generated monitor job of job ``J`` is ``J__deadline_monitor``."""
MONITOR_ENTRY_POINT = "dbxdec-monitor"
"""The console script (in dbxdec's own wheel) that a monitor job's wheel task runs."""
MONITOR_TASK_KEY = "deadline_monitor"
_NOTIFICATIONS = ("email_notifications", "webhook_notifications")
MAX_SYSTEM_DESTINATIONS = 3
"""At most three system destinations per job and notification event type
(https://docs.databricks.com/aws/en/jobs/notifications)."""


@dataclass(frozen=True, slots=True)
class DeadlineMonitor:
    """An opt-in monitor job for a job's deadlines (``dbxdec generate`` adds it).

    Its runs fail when keys newly become overdue, so its ``on_failure`` notifications carry
    the alert; ``state_table`` remembers what was alerted, so nothing alerts twice.

    Args:
        state_table: Delta table (``catalog.schema.table``) of the alerts already sent.
        schedule: Quartz cron of its runs (default: hourly), in the deadline's time zone.
        email_notifications: The job's ``email_notifications`` setting, as in the bundle.
        webhook_notifications: The job's ``webhook_notifications`` setting.

    Raises:
        ValueError: a malformed table name, or no ``on_failure`` destination at all.
    """

    state_table: str
    schedule: str = "0 0 * * * ?"
    email_notifications: Mapping[str, Any] | None = None
    webhook_notifications: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.state_table, str) or _TABLE.fullmatch(self.state_table) is None:
            raise ValueError(
                f"DeadlineMonitor state_table={self.state_table!r} must be a table name "
                "catalog.schema.table (e.g. 'main.ops.deadline_alerts')"
            )
        if not any(
            isinstance(value, Mapping) and value.get("on_failure")
            for value in (self.email_notifications, self.webhook_notifications)
        ):
            raise ValueError(
                "DeadlineMonitor needs an on_failure destination: pass "
                "email_notifications={'on_failure': [...]} or "
                "webhook_notifications={'on_failure': [{'id': ...}]}"
            )
        hooks = (self.webhook_notifications or {}).get("on_failure") or ()
        if len(hooks) > MAX_SYSTEM_DESTINATIONS:
            raise ValueError(
                f"DeadlineMonitor webhook_notifications on_failure has {len(hooks)} destinations; "
                f"Databricks allows at most {MAX_SYSTEM_DESTINATIONS} per event (use an email "
                "list or fewer destinations)"
            )

    def notifications(self) -> dict[str, Any]:
        """The monitor job's notification settings, by setting name."""
        given = (self.email_notifications, self.webhook_notifications)
        return {
            name: dict(value) for name, value in zip(_NOTIFICATIONS, given, strict=True) if value
        }


@dataclass(frozen=True, slots=True, init=False)
class Deadline:
    """When a backfill key is due.

    ``Deadline("09:00")`` (daily and coarser keys): due at 09:00 local time on the first day
    whose 09:00 comes strictly after the key's window end plus ``data_lag`` periods;
    ``Deadline(after=timedelta(hours=2))`` (any cadence): that long after it. "Local" is the
    job's schedule zone, else the backfill's ``tz``; a skipped deadline time is due after
    the jump (``compatible``), a repeated one at its first occurrence. Due times strictly
    increase with the key.

    Args:
        at: ``"HH:MM"`` local time (daily, weekly and monthly keys).
        after: A positive ``timedelta`` after the window end plus ``data_lag`` (any cadence).
        monitor: Also generate a :class:`DeadlineMonitor` job.

    Raises:
        ValueError: neither or both of ``at`` and ``after``, a malformed time, a
            non-positive ``after``.

    Example:
        >>> from datetime import timedelta
        >>> from .time_backfill import DailyBackfill, HourlyBackfill
        >>> daily = Deadline("09:00").for_keys(DailyBackfill("2024-03-01", tz="Europe/Amsterdam"))
        >>> daily.due("2024-03-30")
        Instant("2024-03-31 07:00:00Z")
        >>> hourly = Deadline(after=timedelta(minutes=30)).for_keys(HourlyBackfill("2024-03-31T00"))
        >>> hourly.due("2024-03-31T05")
        Instant("2024-03-31 06:30:00Z")
    """

    at: str | None
    after: timedelta | None
    monitor: DeadlineMonitor | None

    def __init__(
        self,
        at: str | None = None,
        *,
        after: timedelta | None = None,
        monitor: DeadlineMonitor | None = None,
    ) -> None:
        if (at is None) == (after is None):
            raise ValueError(
                "Deadline takes a time of day or after=: Deadline('09:00') or "
                "Deadline(after=timedelta(hours=2))"
            )
        if at is not None and (not isinstance(at, str) or _TIME_OF_DAY.fullmatch(at) is None):
            raise ValueError(f"Deadline time {at!r} must be HH:MM on a 24-hour clock, e.g. '09:00'")
        if after is not None and (not isinstance(after, timedelta) or after <= timedelta(0)):
            raise ValueError(f"Deadline after={after!r} must be a timedelta longer than zero")
        if monitor is not None and not isinstance(monitor, DeadlineMonitor):
            raise ValueError("Deadline monitor= takes a DeadlineMonitor(state_table=..., ...)")
        object.__setattr__(self, "at", at)
        object.__setattr__(self, "after", after)
        object.__setattr__(self, "monitor", monitor)

    def for_keys(self, backfill: BackfillDef | None, tz: str | None = None) -> KeyDeadlines:
        """This deadline on ``backfill``'s keys, local times in ``tz`` (default: the backfill's).

        Raises:
            ValueError: no time-based backfill, a time of day on hourly keys, an unknown zone,
                or a monitor schedule that is not valid Quartz.
        """
        if not isinstance(backfill, TimeBackfill):
            what = "none" if backfill is None else type(backfill).__name__
            raise ValueError(
                f"a deadline needs a time-based backfill= (Daily, Weekly, Monthly, Hourly); "
                f"got {what}"
            )
        if self.at is not None and backfill.cadence == HOURLY:
            raise ValueError(
                f"Deadline({self.at!r}) is a time of day, for daily or coarser keys; for hourly "
                "keys use Deadline(after=timedelta(...))"
            )
        zone = check_timezone(tz if tz is not None else backfill.tz, what="deadline time zone")
        if self.monitor is not None:
            QuartzSchedule(self.monitor.schedule, timezone=zone)  # its ValueError names the field
        return KeyDeadlines(self, backfill, zone)


@dataclass(frozen=True, slots=True)
class KeyDeadlines:
    """A :class:`Deadline` applied to the keys of one backfill, in one time zone."""

    deadline: Deadline
    backfill: TimeBackfill
    tz: str

    def ready_by(self, key: str) -> Instant:
        """When ``key``'s data can be complete: its window's end plus ``data_lag`` periods.

        Raises:
            ValueError: ``key`` is malformed or skipped by a clock change.
        """
        window = self.backfill.window(key)
        lag = self.backfill.data_lag
        return self.backfill.window(self.backfill.shift_key(key, lag)).end if lag else window.end

    def due(self, key: str) -> Instant:
        """When ``key`` is due (strictly after its window's end).

        Raises:
            ValueError: ``key`` is malformed or skipped by a clock change.
        """
        ready = self.ready_by(key)
        after = self.deadline.after
        if after is not None:
            return ready.add(seconds=after.total_seconds())
        assert self.deadline.at is not None
        hour, minute = (int(part) for part in self.deadline.at.split(":"))
        day = ready.to_tz(self.tz).date()
        while True:  # at most two turns: the day of `ready`, or the next one
            # a skipped time is due as long after the jump as it was after the hour
            # ("compatible"); a repeated one at its first occurrence
            due = day.at(Time(hour, minute)).assume_tz(self.tz, disambiguation="compatible")
            if due.to_instant() > ready:
                return due.to_instant()
            day = day.add(days=1)

    def due_keys(self, keys: Sequence[str], now: Instant) -> list[str]:
        """The prefix of ``keys`` (in key order) that is due strictly before ``now``.

        Due times increase with the key, so the prefix is found by bisection.
        """
        return list(keys[: bisect_left(keys, True, key=lambda k: self.due(k) >= now)])
