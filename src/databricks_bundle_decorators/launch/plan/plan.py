"""Backfill plans: which keys run, grouped into which runs, with which job parameters.

A plan is pure data computed from a job's :class:`BackfillDef` and the user's choices;
nothing here talks to a workspace. Key ranges are inclusive at both ends, like
``BackfillDef.keys(start, end)``.

Example:
    >>> from databricks_bundle_decorators import DailyBackfill, Registry, job, task
    >>> @job(backfill=DailyBackfill("2024-01-01"), registry=Registry())
    ... def nightly():
    ...     @task
    ...     def load(): ...
    ...     load()
    >>> plan = build_plan(nightly, start="2024-01-01", end="2024-01-05", batch_size=2)
    >>> [s.label for s in plan.slices]
    ['2024-01-01..2024-01-02', '2024-01-03..2024-01-04', '2024-01-05']
    >>> plan.parameters(plan.slices[0])  # a ranged run names its last key and its first
    {'backfill_key': '2024-01-02', 'backfill_start_key': '2024-01-01', 'backfill_exact': 'false'}
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from whenever import Date, PlainDateTime

from ...backfill.base import BackfillDef
from ...backfill.time_backfill import TimeBackfill
from ...backfill.wire import KeyRange, TaskOrder, keys_label, with_order
from ...definitions import JobDefinition
from ...errors import UsageError, did_you_mean
from ...runtime.programs.task_subset import decode_tasks
from .history import KeyHistory, RerunMode, select_keys

Order = Literal["forward", "reverse"]
ORDERS: tuple[Order, ...] = ("forward", "reverse")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True, slots=True)
class Slice:
    """One run of a backfill at ``index`` in the plan: one key, or an inclusive range of
    consecutive keys in the definition's order; none for the final sync (the last)."""

    index: int
    keys: tuple[str, ...]

    @property
    def is_final_sync(self) -> bool:
        return not self.keys

    @property
    def label(self) -> str:
        """``"2024-01-01"``, ``"2024-01-01..2024-01-07"`` or ``"final sync"``."""
        return keys_label(self.keys)


@dataclass(frozen=True, slots=True)
class BackfillPlan:
    """The runs of one backfill, in launch order (a final sync last); ``exact``: runs
    bypass lookback and gap expansion; ``params``: the user's, passed to every run."""

    job: str
    slices: tuple[Slice, ...]
    exact: bool = False
    params: Mapping[str, str] = field(default_factory=dict)

    @property
    def keys(self) -> list[str]:
        """Every key the plan writes, in launch order."""
        return [key for s in self.slices for key in s.keys]

    def parameters(self, slice_: Slice) -> dict[str, str]:
        """The job parameters of the run for ``slice_``."""
        return slice_parameters(slice_.keys, exact=self.exact, params=self.params)


def with_options(
    plan: BackfillPlan, *, checks: bool = True, force_rewrite: bool = False, tasks: str = ""
) -> BackfillPlan:
    """``plan`` whose runs' order carries ``--no-checks``, ``--force-rewrite`` and
    ``--tasks`` (an :func:`~...runtime.programs.task_subset.encode_tasks` text)."""
    order = TaskOrder(tasks=tuple(decode_tasks(tasks)), checks=checks, force_rewrite=force_rewrite)
    if order == TaskOrder():
        return plan
    return replace(plan, params=with_order(plan.params, order))


def slice_parameters(
    keys: Sequence[str], *, exact: bool, params: Mapping[str, str]
) -> dict[str, str]:
    """Job parameters for a run writing ``keys`` (ranged when more than one); the final
    sync (no keys) has an empty ``backfill_key``."""
    encoded = KeyRange.of(keys) if keys else KeyRange.single("")
    return {**params, **encoded.to_params(exact=exact)}


def build_plan(
    job: JobDefinition,
    *,
    start: str | None = None,
    end: str | None = None,
    keys: Sequence[str] = (),
    order: Order = "forward",
    batch_size: int = 1,
    rerun: RerunMode = "all",
    history: KeyHistory | None = None,
    exact: bool = False,
    final_sync: bool = False,
    params: Mapping[str, str] | None = None,
    only: Collection[str] | None = None,
) -> BackfillPlan:
    """Plan a backfill of ``job``: the keys :func:`selected_keys` picks (else the whole
    definition), filtered by ``rerun`` (with ``history``) and ``only``, grouped into
    ranged runs of ``batch_size`` consecutive keys, launched in ``order``.

    Raises:
        UsageError: the job has no backfill definition, a key or bound is malformed or
            outside the definition, ``start`` is after ``end``, options conflict, or a
            parameter is not a parameter of the job.
    """
    backfill = job.backfill
    if backfill is None:
        raise UsageError(
            f"job {job.name!r} has no backfill definition: add backfill=DailyBackfill(...) "
            "(or another BackfillDef) to its @job"
        )
    if batch_size < 1:
        raise UsageError(f"--batch-size must be at least 1, got {batch_size}")
    if order not in ORDERS:
        raise UsageError(f"--order must be one of {', '.join(ORDERS)}, got {order!r}")
    chosen = selected_keys(backfill, start, end, keys)
    if rerun != "all":
        if history is None:
            raise UsageError(f"--rerun {rerun} needs the job's run history")
        chosen = select_keys(chosen, history, rerun)
    if only is not None:  # before batching: a ranged run never spans a key left out
        chosen = [key for key in chosen if key in only]
    checked_params = _check_params(job, params or {})
    groups = batches(backfill, chosen, batch_size)
    if order == "reverse":
        groups.reverse()
    slices = [Slice(i, group) for i, group in enumerate(groups)]
    if final_sync:
        slices.append(Slice(len(slices), ()))
    return BackfillPlan(job.name, tuple(slices), exact=exact, params=checked_params)


def selected_keys(
    backfill: BackfillDef, start: str | None, end: str | None, keys: Sequence[str] = ()
) -> list[str]:
    """The keys ``keys`` (explicit) or ``start``/``end`` (inclusive, either may be
    omitted; a day bounds an hourly definition, :func:`hourly_day_bound`) select of
    ``backfill``, in its order: a plan's keys before any filter.

    Raises:
        UsageError: a key or bound is malformed or outside the definition, ``start``
            is after ``end``, or ``keys`` is combined with a bound.
    """
    if keys:
        if start is not None or end is not None:
            raise UsageError("--keys cannot be combined with --start/--end")
        for key in keys:
            try:
                backfill.validate_key(key, what="key")
            except ValueError as exc:
                raise UsageError(f"--keys: {exc}") from None
        return backfill.sort_keys(list(keys))
    start, end = hourly_day_bound(backfill, start, "start"), hourly_day_bound(backfill, end, "end")
    try:
        return backfill.keys(start, end)
    except ValueError as exc:
        raise UsageError(f"{_range_option(start, end)}: {exc}") from None


def hourly_day_bound(
    backfill: BackfillDef, bound: str | None, side: Literal["start", "end"]
) -> str | None:
    """``bound`` as an hourly key when it is a day (``YYYY-MM-DD``) of an hourly
    definition: its first hour for the start, its last for the end (found from instants:
    a DST day has 23 or 25 hours), clamped to the definition's bounds; otherwise
    ``bound`` unchanged (so a malformed one meets the usual error).

    Example:
        >>> from databricks_bundle_decorators.backfill import HourlyBackfill
        >>> berlin = HourlyBackfill("2024-03-30T00", "2024-04-30T23", tz="Europe/Berlin")
        >>> [hourly_day_bound(berlin, "2024-03-31", side) for side in ("start", "end")]
        ['2024-03-31T00', '2024-03-31T23']
        >>> hourly_day_bound(berlin, "2024-03-31T05", "start")
        '2024-03-31T05'
    """
    if bound is None or not isinstance(backfill, TimeBackfill) or backfill.kind != "hourly":
        return bound
    if _DAY.fullmatch(bound) is None:
        return bound
    try:
        day = Date.parse_iso(bound)
    except ValueError:
        return bound
    if side == "start":
        first = PlainDateTime(day.year, day.month, day.day).assume_tz(
            backfill.tz,
            disambiguation="compatible",  # a skipped midnight: the day's first instant
        )
        key = backfill.key_of(first.to_instant())
        limit: str | None = backfill.start_date
        if limit is not None and backfill.compare(key, limit) < 0 and limit[:10] == bound:
            key = limit
        return key
    after = day.add(days=1)
    next_day = PlainDateTime(after.year, after.month, after.day).assume_tz(
        backfill.tz, disambiguation="compatible"
    )
    key = backfill.key_of(next_day.to_instant().subtract(microseconds=1))
    limit = backfill.end_date
    if limit is None:
        limit = backfill.current_key()  # an open end: the current key, as the plan's
    if backfill.compare(key, limit) > 0 and limit[:10] == bound:
        key = limit
    return key


def _range_option(start: str | None, end: str | None) -> str:
    given = [f"--{name}" for name, bound in (("start", start), ("end", end)) if bound is not None]
    return "/".join(given) or "backfill definition"


def batches(backfill: BackfillDef, keys: list[str], size: int) -> list[tuple[str, ...]]:
    """Chunks of at most ``size`` keys consecutive in the definition (a ranged run writes
    every key from its first to its last: a chunk never spans a key not selected)."""
    if not keys:
        return []
    if size == 1:
        return [(key,) for key in keys]
    universe = backfill.keys(keys[0], keys[-1])
    position = {key: i for i, key in enumerate(universe)}
    groups: list[tuple[str, ...]] = []
    current: list[str] = []
    for key in keys:
        adjacent = current and position[key] == position[current[-1]] + 1
        if current and (not adjacent or len(current) == size):
            groups.append(tuple(current))
            current = []
        current.append(key)
    groups.append(tuple(current))
    return groups


def _check_params(job: JobDefinition, params: Mapping[str, str]) -> dict[str, str]:
    for name in params:
        if name not in job.params:
            known = sorted(job.params)
            listing = ", ".join(known) if known else "none"
            raise UsageError(
                f"--param {name!r} is not a parameter of job {job.name!r}."
                f"{did_you_mean(name, known)} Job parameters: {listing}"
            )
    return dict(params)
