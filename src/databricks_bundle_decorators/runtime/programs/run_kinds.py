"""The kinds of run ``dbxdec-run`` performs, decoded once from the wire parameters.

A task of a job run is one of:

- ``task``: the ordinary run: load the inputs, call the task, check and write its output
  (:mod:`.task_run`);
- ``stage``: a slice of a full refresh: the ordinary run writing to the staging
  tables (:mod:`.task_run` too);
- ``swap``: the keyless end of a full refresh: swap the staging tables in
  (:mod:`.full_refresh`);
- ``undo``: restore the tables the task writes (:mod:`.undo`);
- ``presence``: report which keys have rows (:mod:`.presence`);
- ``measure``: report how a canary run changed its keys, for the diff gate
  (:mod:`.measure`).

Each is told by ``dbxdec_order`` (empty: an ordinary run), which :func:`decode_run_kind`
reads once; :func:`~..running.dispatch.run_task` hands the request to the kind's program, a
:class:`RunProgram`. Each kind's module owns its program and imports this module, never
another kind's module.
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

RunKindName = Literal["task", "stage", "swap", "undo", "presence", "measure"]
RUN_KIND_NAMES: tuple[RunKindName, ...] = ("task", "stage", "swap", "undo", "presence", "measure")
_O = TypeVar("_O", TaskOrder, UndoOrder, PresenceOrder, MeasureOrder)


@dataclass(frozen=True, slots=True)
class RunKind:
    """What a run does, with the order that says how (an ordinary run's: ``TaskOrder()``).

    Example:
        >>> RunKind("task").processes_keys
        True
        >>> RunKind("swap").processes_keys
        False
    """

    name: RunKindName
    order: Order = field(default_factory=TaskOrder)

    @property
    def processes_keys(self) -> bool:
        """Whether the run resolves and processes backfill keys (undo, presence,
        measure and swap runs are keyless: their orders say what to do)."""
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
    """The run's kind and order, from ``dbxdec_order`` (read once; empty: an ordinary run).

    Raises:
        UsageError: the parameter is set but is not an order.
    """
    try:
        order = decode_order(params.get(ORDER_PARAM, "")) or TaskOrder()
    except ValueError as exc:
        raise UsageError(f"job {job.name!r}: {exc}") from None
    return RunKind(order.kind, order)


KeySourceName = Literal["keyless", "scheduled", "explicit", "triggered", "catch_up"]


@dataclass(frozen=True, slots=True)
class KeySource:
    """Where a run's keys come from, chosen once where its request is built
    (:func:`~..triggers.triggered.with_key_source`).

    Attributes:
        name: ``scheduled`` (derived from the run's time: data lag, lookback, schedule
            gaps), ``explicit`` (``backfill_key``, or a range from ``backfill_start_key``),
            ``triggered`` (from the tables or files that changed), ``catch_up`` (the keys
            the launcher's catch-up orders, or the missing keys of a ``CatchUp`` run), or
            ``keyless`` (no backfill, or a keyless kind).
        idle: The source left the run nothing to write: the task is not called.
        committed: Records, once the task committed, what the source keeps of it (a
            triggered run's ``done`` row, a keyed run's coverage); ``None``: nothing.
    """

    name: KeySourceName
    idle: bool = False
    committed: Callable[[], None] | None = None


@dataclass(frozen=True, slots=True)
class TaskRunRequest:
    """One task of one job run.

    Attributes:
        job: The job definition.
        task_key: The task to run.
        params: Every job parameter of the run (see :func:`~..running.dispatch.job_parameters`).
        keys: The run's resolved keys (see :func:`~..running.dispatch.run_keys`), ``None``
            without backfill.
        now: The clock for key resolution inside the task; ``None`` reads the wall clock.
        for_each_element: On Databricks, the one iteration element of a for-each task
            (Databricks runs the iterations); ``None`` runs every element in turn.
        kind: The run's kind, decoded from ``params`` once where the request was made
            (:func:`~..running.dispatch.task_request`); ``None``:
            :func:`~..running.dispatch.run_task` decodes it.
        source: Where ``keys`` came from, chosen where the request was made;
            ``None``: :func:`~..running.dispatch.run_task` chooses it.
    """

    job: JobDefinition
    task_key: str
    params: Mapping[str, str]
    keys: ResolvedKeys | None
    now: datetime | None = None
    for_each_element: str | None = None
    kind: RunKind | None = None
    source: KeySource | None = None


class RunProgram(Protocol):
    """The program of one run kind: what :func:`~..running.dispatch.run_task` hands a request to.

    A new kind is a name in :data:`RunKindName`, a case in :func:`decode_run_kind` and
    a program in its own module, entered in :data:`~..running.dispatch.PROGRAMS`.
    """

    def __call__(
        self,
        request: TaskRunRequest,
        kind: RunKind,
        *,
        environment: RunEnvironment,
        task_values: TaskValueStore,
    ) -> None:
        """Run ``request``'s task as a run of ``kind``.

        Raises:
            DbxdecError: the run failed; the message names the task.
        """
        ...
