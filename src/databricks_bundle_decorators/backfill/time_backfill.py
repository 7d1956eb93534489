"""Time-partitioned backfills: one general class, four thin presets, and ``CatchUp``."""

from __future__ import annotations

import difflib
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Literal

from whenever import (
    Instant,
    PlainDateTime,
    TimeZoneNotFoundError,
    ZonedDateTime,
    available_timezones,
)

from .base import BackfillDef, TimeWindow
from .cadence import DAILY, HOURLY, MONTHLY, WEEKLY, Cadence

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


def check_timezone(tz: object, *, what: str = "tz") -> str:
    """Return ``tz`` if it names an IANA time zone, else raise ``ValueError``."""
    if not isinstance(tz, str) or not tz:
        raise ValueError(f"{what} must be an IANA time zone name such as 'Europe/Berlin'")
    try:
        ZonedDateTime(2000, 1, 1, tz=tz)
    except (TimeZoneNotFoundError, ValueError):
        close = difflib.get_close_matches(tz, sorted(available_timezones()), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"unknown time zone {tz!r} for {what}: expected an IANA name such as "
            f"'UTC' or 'Europe/Berlin'.{hint}"
        ) from None
    return tz


def to_instant(at: Instant | datetime) -> Instant:
    """An ``Instant`` from an ``Instant`` or an aware ``datetime``."""
    if isinstance(at, Instant):
        return at
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"datetime {at.isoformat()} must be timezone-aware")
    return Instant(at)


def _check_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a whole number >= 0, got {value!r}")
    return value


@dataclass(frozen=True)
class TimeBackfill(BackfillDef):
    """Keys that partition time in a time zone, one key per period of a cadence.

    Each key has a half-open window ``[start, end)`` of instants; consecutive windows tile
    the timeline. Clock changes: a period starts at the first instant the wall clock reaches
    *or passes* its start, so a wholly skipped period (a DST hour, a day lost crossing the
    date line) has no key, a partly skipped one covers only its existing instants, and a
    repeated hour is one key spanning both occurrences. ``keys``, ``window``, ``key_of``,
    ``validate_key``, lookback and ``data_lag`` all follow this rule.

    Args:
        start_date: First key (inclusive).
        end_date: Last key (inclusive); defaults to the current key (see ``data_lag``).
        tz: IANA time zone in which periods are cut.
        lookback: Number of additional prior keys a run reads (all run modes).
        collect_schedule_gaps: Scheduled runs also process the keys since the previous
            cron fire (auto-derived keys only).
        data_lag: Periods subtracted from "now" for :meth:`current_key` and the default
            end bound, for sources that deliver late.
        catch_up: A :class:`CatchUp`: a scheduled run also processes missing keys.

    Raises:
        ValueError: a bound in the wrong format, ``start_date`` after ``end_date``,
            an unknown time zone, or a negative ``lookback``/``data_lag``.
    """

    cadence: ClassVar[Cadence]

    start_date: str
    end_date: str | None = None
    tz: str = "UTC"
    lookback: int = 0
    collect_schedule_gaps: bool = False
    data_lag: int = 0
    catch_up: CatchUp | None = None
    _start: PlainDateTime = field(init=False, repr=False, compare=False)
    _end: PlainDateTime | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_timezone(self.tz)
        _check_count(self.lookback, "lookback")
        _check_count(self.data_lag, "data_lag")
        if not isinstance(self.collect_schedule_gaps, bool):
            raise ValueError("collect_schedule_gaps must be True or False")
        if self.catch_up is not None and not isinstance(self.catch_up, CatchUp):
            raise ValueError("catch_up must be CatchUp(...) or None")
        start = self.cadence.parse(self.start_date, what="start_date")
        self._require_existing(start, "start_date")
        end: PlainDateTime | None = None
        if self.end_date is not None:
            end = self.cadence.parse(self.end_date, what="end_date")
            self._require_existing(end, "end_date")
            if end < start:
                raise ValueError(
                    f"start_date {self.start_date!r} is after end_date {self.end_date!r}"
                )
        object.__setattr__(self, "_start", start)
        object.__setattr__(self, "_end", end)

    # -- BackfillDef -----------------------------------------------------------------

    @property
    def kind(self) -> str:
        return self.cadence.name

    @property
    def key_format(self) -> str:
        return self.cadence.key_format

    @property
    def is_time_based(self) -> bool:
        return True

    def keys(
        self, start: str | None = None, end: str | None = None, *, now: datetime | None = None
    ) -> list[str]:
        """Enumerate keys from ``start`` to ``end``, both inclusive, in order.

        With an open ``end_date`` the last key is ``current_key(now=now)``; a run passes
        its own logical time as ``now`` (``None`` reads the wall clock).

        Example:
            >>> HourlyBackfill("2024-03-31T00", "2024-03-31T04", tz="Europe/Berlin").keys()
            ['2024-03-31T00', '2024-03-31T01', '2024-03-31T03', '2024-03-31T04']
        """
        lo, hi = self._bounds(start, end, now)
        if hi < lo:
            return []
        keys = self.cadence.format_range(lo, hi)
        # Keys sort as text in time order (four-digit years, fixed widths), so each of the
        # few skipped keys is found by bisection instead of testing every key.
        for key in sorted(self._skipped_starts(lo, hi)):
            index = bisect_left(keys, key)
            if index < len(keys) and keys[index] == key:
                del keys[index]
        return keys

    def current_key(self, *, now: datetime | None = None) -> str:
        """The key containing ``now`` (default: the wall clock), ``data_lag`` keys back."""
        key = self.key_of(Instant.now() if now is None else to_instant(now))
        return self.shift_key(key, -self.data_lag) if self.data_lag else key

    def validate_key(self, key: str, *, what: str = "backfill_key") -> None:
        start = self.cadence.parse(key, what=what)
        self._require_existing(start, what)
        if start < self._start:
            raise ValueError(
                f"{what} {key!r} is before the backfill's start_date {self.start_date!r}"
            )
        if self._end is not None and start > self._end:
            raise ValueError(f"{what} {key!r} is after the backfill's end_date {self.end_date!r}")

    def sort_keys(self, keys: list[str]) -> list[str]:
        return sorted(set(keys), key=self.cadence.parse)

    def window(self, key: str) -> TimeWindow:
        """The half-open window ``[start, end)`` of instants covered by ``key``.

        Example:
            >>> HourlyBackfill("2024-10-27T00", tz="Europe/Berlin").window("2024-10-27T02")
            TimeWindow(start=Instant("2024-10-27 00:00:00Z"), end=Instant("2024-10-27 02:00:00Z"))
        """
        start = self.cadence.parse(key)
        self._require_existing(start, "key")
        return TimeWindow(self._instant_of(start), self._instant_of(self.cadence.shift(start, 1)))

    # -- time arithmetic -------------------------------------------------------------

    def key_of(self, at: Instant | datetime) -> str:
        """The key whose window contains the instant ``at`` (bounds not checked)."""
        instant = to_instant(at)
        cadence = self.cadence
        start = cadence.floor(instant.to_tz(self.tz).to_plain())
        # The floor of the wall time is right except around repeated or skipped wall
        # times; walk to the period whose window really contains the instant.
        while self._instant_of(start) > instant:
            start = cadence.shift(start, -1)
        while self._instant_of(cadence.shift(start, 1)) <= instant:
            start = cadence.shift(start, 1)
        return cadence.format(start)

    def shift_key(self, key: str, periods: int) -> str:
        """The key ``periods`` existing keys after (negative: before) ``key``."""
        start = self.cadence.parse(key)
        step = 1 if periods >= 0 else -1
        remaining = abs(periods)
        while remaining:
            start = self.cadence.shift(start, step)
            if self._exists(start):
                remaining -= 1
        return self.cadence.format(start)

    def previous_keys(self, key: str, count: int) -> list[str]:
        """Up to ``count`` keys before ``key``, never before ``start_date``, in order."""
        start = self.cadence.parse(key)
        found: list[str] = []
        while len(found) < count:
            start = self.cadence.shift(start, -1)
            if start < self._start:
                break
            if self._exists(start):
                found.append(self.cadence.format(start))
        found.reverse()
        return found

    def key_start(self, key: str) -> ZonedDateTime:
        """The zoned start of ``key``'s window, in the definition's time zone."""
        return self.window(key).start.to_tz(self.tz)

    def compare(self, a: str, b: str) -> int:
        """-1, 0 or 1 as key ``a`` sorts before, with or after key ``b``."""
        pa, pb = self.cadence.parse(a), self.cadence.parse(b)
        return (pa > pb) - (pa < pb)

    # -- internals -------------------------------------------------------------------

    def _instant_of(self, wall: PlainDateTime) -> Instant:
        """The first instant at which the wall clock reaches or passes ``wall``."""
        # A repeated wall time: "compatible" picks its earlier occurrence.
        zoned = wall.assume_tz(self.tz, disambiguation="compatible")
        if zoned.to_plain() == wall:
            return zoned.to_instant()
        # A skipped wall time: the clock passes it at the transition that skips it.
        # ("compatible" would shift it forward by the gap's length, which lands past the
        # transition whenever the gap is longer than, or not aligned to, the period.)
        before = wall.assume_tz(self.tz, disambiguation="earlier")
        transition = before.next_transition()
        if transition is None:  # pragma: no cover - a skipped time has a transition
            return zoned.to_instant()
        return transition.to_instant()

    def _exists(self, start: PlainDateTime) -> bool:
        return self._instant_of(start) < self._instant_of(self.cadence.shift(start, 1))

    def _require_existing(self, start: PlainDateTime, what: str) -> None:
        if not self._exists(start):
            raise ValueError(
                f"{what} {self.cadence.format(start)!r} does not exist in {self.tz}: "
                f"that local time is skipped by a clock change"
            )

    def _bounds(
        self, start: str | None, end: str | None, now: datetime | None
    ) -> tuple[PlainDateTime, PlainDateTime]:
        lo = self._start
        hi = self._end
        if hi is None:
            hi = self.cadence.parse(self.current_key(now=now))
        if start is not None:
            self.validate_key(start, what="start")
            lo = self.cadence.parse(start)
        if end is not None:
            self.validate_key(end, what="end")
            parsed_end = self.cadence.parse(end)
            if self._end is None and parsed_end > hi:
                raise ValueError(
                    f"end {end!r} is after the current key {self.cadence.format(hi)!r} "
                    f"(end_date is open, data_lag={self.data_lag})"
                )
            hi = parsed_end
        if start is not None and end is not None and hi < lo:
            raise ValueError(f"start {start!r} is after end {end!r}")
        return lo, hi

    def _skipped_starts(self, lo: PlainDateTime, hi: PlainDateTime) -> frozenset[str]:
        """Keys in ``[lo, hi]`` whose whole period lies in a DST gap (from the transitions)."""
        cadence = self.cadence
        end = self._instant_of(cadence.shift(hi, 1))
        cursor = self._instant_of(lo).to_tz(self.tz)
        skipped: set[str] = set()
        while True:
            transition = cursor.next_transition()
            if transition is None or transition.to_instant() > end:
                break
            before = transition.to_instant().subtract(seconds=1).to_tz(self.tz).offset
            jump = transition.offset - before
            if jump.total("seconds") > 0:
                gap_end = transition.to_plain()
                gap_start = gap_end.subtract(
                    seconds=int(jump.total("seconds")), naive_arithmetic_ok=True
                )
                start = cadence.floor(gap_start)
                while start < gap_end:
                    if gap_start <= start and cadence.shift(start, 1) <= gap_end:
                        skipped.add(cadence.format(start))
                    start = cadence.shift(start, 1)
            cursor = transition
        return frozenset(skipped)


class DailyBackfill(TimeBackfill):
    """One key per calendar day: ``YYYY-MM-DD``.

    Example:
        >>> DailyBackfill("2024-02-27", "2024-03-01").keys()
        ['2024-02-27', '2024-02-28', '2024-02-29', '2024-03-01']
    """

    cadence = DAILY


class WeeklyBackfill(TimeBackfill):
    """One key per ISO week, Monday to Sunday: ``YYYY-Www``.

    Example:
        >>> WeeklyBackfill("2020-W52", "2021-W01").keys()
        ['2020-W52', '2020-W53', '2021-W01']
    """

    cadence = WEEKLY


class MonthlyBackfill(TimeBackfill):
    """One key per calendar month, pinned to the first day: ``YYYY-MM-01``.

    Example:
        >>> MonthlyBackfill("2024-11-01", "2025-01-01").keys()
        ['2024-11-01', '2024-12-01', '2025-01-01']
    """

    cadence = MONTHLY


class HourlyBackfill(TimeBackfill):
    """One key per wall-clock hour in ``tz``: ``YYYY-MM-DDTHH``.

    An hour skipped by a DST change has no key; a repeated hour has one key whose
    window spans both occurrences.
    """

    cadence = HOURLY
