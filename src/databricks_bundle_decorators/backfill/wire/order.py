"""The one job parameter through which the launcher tells a run what to do: ``dbxdec_order``,
empty (an ordinary run) or a JSON object tagged by ``kind`` (:data:`ORDER_KINDS`), read and
written only by :func:`decode_order` and :func:`encode_order`; it never holds ``{{``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from .orders import MeasureOrder, PresenceOrder, UndoOrder
from .params import ORDER_PARAM, KeyRange

OrderKind = Literal["task", "stage", "swap", "undo", "presence", "measure"]
ORDER_KINDS: tuple[OrderKind, ...] = ("task", "stage", "swap", "undo", "presence", "measure")


@dataclass(frozen=True, slots=True)
class TaskOrder:
    """An ordinary backfill run's extras.

    Attributes:
        backfill_id: The backfill's id, carried by every Delta commit of the run (undo finds
            commits by it); ``""`` outside a backfill.
        tasks: The tasks the run runs (``--tasks``/``--skip-tasks``); empty: every task.
        checks: Whether tasks judge their checks before they write (``--no-checks``: no).
        force_rewrite: Whether append-once outputs rewrite keys they hold (``--force-rewrite``).
        keys: The keys a catch-up run processes instead of resolving them (empty: resolve).
    """

    kind: ClassVar[OrderKind] = "task"
    backfill_id: str = ""
    tasks: tuple[str, ...] = ()
    checks: bool = True
    force_rewrite: bool = False
    keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StageOrder(TaskOrder):
    """A slice of a full refresh: its tables are written to the backfill's staging tables."""

    kind: ClassVar[OrderKind] = "stage"


@dataclass(frozen=True, slots=True)
class SwapOrder(TaskOrder):
    """A full refresh's final run: each staging table, checked whole, replaces its table."""

    kind: ClassVar[OrderKind] = "swap"


Order = TaskOrder | StageOrder | SwapOrder | UndoOrder | PresenceOrder | MeasureOrder

_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,150}", re.ASCII)
_RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,63}", re.ASCII)
_TASK = re.compile(r"[A-Za-z0-9_\-]{1,100}", re.ASCII)
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}", re.ASCII)
_TABLE = re.compile(r"[A-Za-z0-9_.]{1,800}", re.ASCII)
_MAX_VERSION = 10**18 - 1


def _text(pattern: re.Pattern[str], *, empty: bool = False) -> Callable[[Any], str]:
    def read(value: Any) -> str:
        if not isinstance(value, str) or not ((empty and value == "") or pattern.fullmatch(value)):
            raise ValueError(f"{value!r} does not match {pattern.pattern}")
        return value

    return read


def _texts(pattern: re.Pattern[str]) -> Callable[[Any], tuple[str, ...]]:
    one = _text(pattern)

    def read(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise ValueError(f"{value!r} is not a list")
        return tuple(one(v) for v in value)

    return read


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    return value


def _undone(value: Any) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, list):
        raise ValueError(f"{value!r} is not a list")
    pairs = []
    for pair in value:
        match pair:
            case [str(table), int(version)] if (
                _TABLE.fullmatch(table) and not isinstance(version, bool)
            ) and 0 <= version <= _MAX_VERSION:
                pairs.append((table, version))
            case _:
                raise ValueError(f"{pair!r} is not [TABLE, VERSION]")
    return tuple(pairs)


_EXTRAS: Mapping[str, Callable[[Any], Any]] = {
    "backfill_id": _text(_ID, empty=True),
    "tasks": _texts(_TASK),
    "checks": _flag,
    "force_rewrite": _flag,
    "keys": _texts(_KEY),
}
_READERS: Mapping[OrderKind, Mapping[str, Callable[[Any], Any]]] = {
    "task": _EXTRAS,
    "stage": {**_EXTRAS, "backfill_id": _text(_ID)},
    "swap": {**_EXTRAS, "backfill_id": _text(_ID)},
    "undo": {
        "backfill_id": _text(_ID),
        "run_ids": _texts(_ID),
        "force": _flag,
        "undone": _undone,
    },
    "presence": {"first": _text(_KEY), "last": _text(_KEY)},
    "measure": {
        "run_id": _text(_RUN),
        "backfill_id": _text(_ID, empty=True),
        "first": _text(_KEY),
        "last": _text(_KEY),
    },
}
_CLASSES: Mapping[OrderKind, type[Order]] = {
    "task": TaskOrder,
    "stage": StageOrder,
    "swap": SwapOrder,
    "undo": UndoOrder,
    "presence": PresenceOrder,
    "measure": MeasureOrder,
}
_REQUIRED: Mapping[OrderKind, tuple[str, ...]] = {
    "task": (),
    "stage": ("backfill_id",),
    "swap": ("backfill_id",),
    "undo": ("backfill_id",),
    "presence": ("first", "last"),
    "measure": ("first", "last", "run_id", "backfill_id"),
}


def _body(order: Order) -> dict[str, Any]:
    """The JSON object of ``order``; a task order leaves out fields at their default."""
    body: dict[str, Any] = {"kind": order.kind}
    for f in fields(order):
        value = getattr(order, f.name)
        if isinstance(value, KeyRange):
            body.update(first=value.first, last=value.last)
        elif not isinstance(order, TaskOrder) or value != f.default:
            body[f.name] = value
    return body


def _build(kind: OrderKind, values: dict[str, Any]) -> Order:
    missing = [name for name in _REQUIRED[kind] if name not in values]
    if missing:
        raise ValueError(f"a {kind} order lacks {missing[0]!r}")
    if "first" in values:
        values["keys"] = KeyRange(values.pop("first"), values.pop("last"))
    return _CLASSES[kind](**values)


def _parse(text: str) -> Order:
    try:
        body = json.loads(text)
    except ValueError:
        raise ValueError("not JSON") from None
    if not isinstance(body, dict) or body.get("kind") not in ORDER_KINDS:
        raise ValueError(f"not an object whose kind is one of {', '.join(ORDER_KINDS)}")
    kind: OrderKind = body.pop("kind")
    readers = _READERS[kind]
    unknown = sorted(set(body) - set(readers))
    if unknown:
        raise ValueError(f"a {kind} order has no field {unknown[0]!r}")
    return _build(kind, {name: readers[name](value) for name, value in body.items()})


def decode_order(value: str) -> Order | None:
    """The order in a ``dbxdec_order`` value; ``None`` when it is empty (an ordinary run).

    Example:
        >>> decode_order('{"kind": "presence", "first": "2024-01-01", "last": "2024-01-05"}')
        PresenceOrder(keys=KeyRange(first='2024-01-01', last='2024-01-05'))

    Raises:
        ValueError: not an order; one line naming ``dbxdec_order`` and what is wrong.
    """
    text = value.strip()
    if not text:
        return None
    try:
        return _parse(text)
    except ValueError as exc:
        shown = text if len(text) <= 80 else f"{text[:77]}..."
        raise ValueError(f"job parameter {ORDER_PARAM}={shown!r} is not an order: {exc}") from None


def encode_order(order: Order) -> str:
    """The ``dbxdec_order`` value of ``order`` (see :func:`decode_order`).

    Example:
        >>> encode_order(PresenceOrder(KeyRange("2024-01-01", "2024-01-05")))
        '{"first": "2024-01-01", "kind": "presence", "last": "2024-01-05"}'

    Raises:
        ValueError: a value that cannot be sent (e.g. a malformed id or key).
    """
    text = json.dumps(_body(order), sort_keys=True)
    decode_order(text)
    return text


def order_in(params: Mapping[str, str]) -> Order | None:
    """The order in a run's job parameters; ``None`` when there is none or it is no order."""
    try:
        return decode_order(params.get(ORDER_PARAM, ""))
    except ValueError:
        return None


def task_order(params: Mapping[str, str]) -> TaskOrder:
    """The task, stage or swap order in job parameters; ``TaskOrder()`` when there is none.

    >>> task_order({"dbxdec_order": ""})
    TaskOrder(backfill_id='', tasks=(), checks=True, force_rewrite=False, keys=())

    Raises:
        ValueError: ``dbxdec_order`` holds no order, or one of another kind.
    """
    order = decode_order(params.get(ORDER_PARAM, "")) or TaskOrder()
    if not isinstance(order, TaskOrder):
        raise ValueError(f"job parameter {ORDER_PARAM} holds a {type(order).__name__}")
    return order


def with_order(params: Mapping[str, str], order: Order) -> dict[str, str]:
    """``params`` with ``order`` in ``dbxdec_order`` (see :func:`encode_order`)."""
    return {**params, ORDER_PARAM: encode_order(order)}


def keyless_run(params: Mapping[str, str]) -> bool:
    """Whether a run with an empty ``backfill_key`` still writes no key: an undo, presence or
    measurement run, or a full refresh's swap run (a value that is no order counts as none).

    >>> keyless_run({"dbxdec_order": encode_order(UndoOrder("x"))})
    True
    >>> keyless_run({"backfill_key": ""})
    False
    """
    order = order_in(params)
    return isinstance(order, UndoOrder | PresenceOrder | MeasureOrder | SwapOrder)
