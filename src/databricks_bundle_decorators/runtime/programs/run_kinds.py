"""The kinds of run ``dbxdec-run`` performs, decoded once from ``dbxdec_order``.

``task`` (the ordinary run) and ``stage`` (a full refresh's slice, into the staging
tables) run :mod:`.task_run`; ``swap`` (:mod:`.full_refresh`), ``undo`` (:mod:`.undo`),
``presence`` (:mod:`.presence`) and ``measure`` (:mod:`.measure`) are keyless: their
orders say what to do. :func:`~..running.dispatch.run_task` hands a request to its kind's
:class:`RunProgram`; a kind's module imports this one, never another kind's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, TypeVar

from ...backfill import ResolvedKeys
from ...backfill.wire import (
    ORDER_PARAM,
    MeasureOrder,
    Order,
    PresenceOrder,
    TaskOrder,
    UndoOrder,
    decode_order,
)
from ...definitions import JobDefinition, TaskValueStore
from ...definitions.contracts import RunEnvironment
from ...errors import UsageError
from ..core.context import use_environment

RunKindName = Literal["task", "stage", "swap", "undo", "presence", "measure"]
RUN_KIND_NAMES: tuple[RunKindName, ...] = ("task", "stage", "swap", "undo", "presence", "measure")
_O = TypeVar("_O", TaskOrder, UndoOrder, PresenceOrder, MeasureOrder)


@dataclass(frozen=True, slots=True)
class RunKind:
    """What a run does, with the order that says how (an ordinary run's: ``TaskOrder()``).

    Example:
        >>> RunKind("task").processes_keys, RunKind("swap").processes_keys
        (True, False)
    """

    name: RunKindName
    order: Order = field(default_factory=TaskOrder)

    @property
    def processes_keys(self) -> bool:
        """Whether the run resolves and processes backfill keys (task and stage runs)."""
        return self.name in ("task", "stage")

    def order_as(self, kind: type[_O]) -> _O:
        """The run's order, which the kind's program knows the type of.

        Raises:
            TypeError: the order is not a ``kind`` (a program handed the wrong kind).
        """
        if not isinstance(self.order, kind):
            raise TypeError(f"a {self.name} run has no {kind.__name__}")
        return self.order


def decode_run_kind(job: JobDefinition, params: Mapping[str, str]) -> RunKind:
    """The run's kind and order, from ``dbxdec_order`` (empty: an ordinary run).

    Raises:
        UsageError: the parameter is set but is not an order.
    """
    try:
        order = decode_order(params.get(ORDER_PARAM, "")) or TaskOrder()
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: {exc}") from None
    return RunKind(order.kind, order)


def order_keys(job: JobDefinition, order: PresenceOrder | MeasureOrder) -> list[str]:
    """The keys a presence or measure order names, from the job's backfill definition.

    Raises:
        UsageError: the job has no backfill, or the order's keys are not its keys.
    """
    what, verb = ("presence", "look for") if isinstance(order, PresenceOrder) else ("measure",) * 2
    if job.backfill is None:
        raise UsageError(f"job {job.name!r} has no backfill definition, so no keys to {verb}")
    try:
        return list(job.backfill.keys(order.keys.first, order.keys.last))
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: {what} order: {exc}") from None


KeySourceName = Literal["keyless", "scheduled", "explicit", "triggered", "catch_up"]


@dataclass(frozen=True, slots=True)
class KeySource:
    """Where a run's keys come from (``scheduled``, ``explicit``, ``triggered``,
    ``catch_up`` or ``keyless``), chosen once by
    :func:`~..triggers.triggered.with_key_source`. ``idle``: nothing to write, the task is
    not called; ``committed``: records what the source keeps once the task committed."""

    name: KeySourceName
    idle: bool = False
    committed: Callable[[], None] | None = None


@dataclass(frozen=True, slots=True)
class TaskRunRequest:
    """One task of one job run: every job parameter, the resolved keys (``None``:
    keyless), the clock for key resolution in the task (``None``: the wall clock), the one
    for-each element on Databricks (``None``: every element in turn), and the kind and key
    source (``None``: :func:`~..running.dispatch.run_task` sets them)."""

    job: JobDefinition
    task_key: str
    params: Mapping[str, str]
    keys: ResolvedKeys | None
    now: datetime | None = None
    for_each_element: str | None = None
    kind: RunKind | None = None
    source: KeySource | None = None


class RunProgram(Protocol):
    """The program of one run kind, entered in :data:`~..running.dispatch.PROGRAMS`.

    Raises:
        DbxdecError: the run failed; the message names the task.
    """

    def __call__(
        self,
        request: TaskRunRequest,
        kind: RunKind,
        *,
        environment: RunEnvironment,
        task_values: TaskValueStore,
    ) -> None: ...


def order_program(
    run: Callable[[JobDefinition, str, _O, RunEnvironment], object], order: type[_O]
) -> RunProgram:
    """The program of a keyless kind: ``run(job, task_key, order, environment)`` with the
    environment current."""

    def program(
        request: TaskRunRequest,
        kind: RunKind,
        *,
        environment: RunEnvironment,
        task_values: TaskValueStore,
    ) -> None:
        with use_environment(environment):
            run(request.job, request.task_key, kind.order_as(order), environment)

    return program
