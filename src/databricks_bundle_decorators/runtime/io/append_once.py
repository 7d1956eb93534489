"""Append-once outputs (seed 004's ``INSERT INTO ONCE``): each backfill key is written once.

``SparkTableIoManager(..., write="append_once")`` appends only the run's keys the table
holds no row for yet (a key that produced no rows stays unwritten), in one commit with
the run's ``txnAppId`` (a retried attempt is skipped by Delta), and prints the keys it
skips; ``--force-rewrite`` replaces the run's keys as a replacing write does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import Any, Protocol

from ...backfill.scope import KeyScope
from ...definitions.contracts import OutputContext, RunEnvironment
from ..checks.metering import KeyedTable
from ..core.errors import TaskRunError

_SHOWN_KEYS = 5


class AppendOnceTable(KeyedTable, Protocol):
    """A keyed table that can also select a scope's rows."""

    def read_predicate(self, scope: KeyScope) -> str | None: ...


def written_keys(
    manager: AppendOnceTable, scope: KeyScope, environment: RunEnvironment
) -> frozenset[str]:
    """The keys of ``scope`` that have rows in the table: one ``GROUP BY`` over the key
    columns under the read predicate (empty when the table does not exist)."""
    column = manager.partition_column
    assert column is not None  # append-once requires one
    columns = [column] if manager.static_column is None else [manager.static_column, column]
    frame = manager.table_format(environment).read(
        environment.spark, manager.table_ref(environment), partition_column=column, keys=scope.keys
    )
    if frame is None:
        return frozenset()
    predicate = manager.read_predicate(scope)
    if predicate is not None:
        frame = frame.where(predicate)
    rows = frame.groupBy(*columns).count().collect()
    found = {":".join(_key_text(row[c]) for c in columns) for row in rows}
    return frozenset(found & set(scope.keys))


def _key_text(value: Any) -> str:
    """A partition value as a key: a ``DATE`` column holds daily keys as dates."""
    return value.isoformat() if isinstance(value, date) else str(value)


def skip_message(task_key: str, table: str, skipped: Sequence[str], *, all_skipped: bool) -> str:
    """The line printed for the keys an append-once write skips.

    Example:
        >>> print(skip_message("load", "main.raw.events", ["2024-01-01"], all_skipped=False))
        ... # doctest: +NORMALIZE_WHITESPACE
        task 'load': table main.raw.events already holds key 2024-01-01 (append-once);
        skipped it, the other keys are appended (--force-rewrite rewrites it)
    """
    listed = ", ".join(skipped[:_SHOWN_KEYS])
    more = f" and {len(skipped) - _SHOWN_KEYS} more" if len(skipped) > _SHOWN_KEYS else ""
    noun, them = ("key", "it") if len(skipped) == 1 else ("keys", "them")
    outcome = (
        "nothing was written, the table keeps its version"
        if all_skipped
        else f"skipped {them}, the other keys are appended"
    )
    return (
        f"task {task_key!r}: table {table} already holds {noun} {listed}{more} (append-once); "
        f"{outcome} (--force-rewrite rewrites {them})"
    )


def unwritten_part(
    manager: AppendOnceTable, context: OutputContext, frame: Any
) -> tuple[OutputContext, Any] | None:
    """The context narrowed to the run's keys the table does not hold and the output
    without the other keys' rows; ``None`` (after printing the skip message) when the
    table holds every key.

    Raises:
        TaskRunError: the run has no backfill keys.
    """
    scope = context.scope
    table = str(manager.table)
    if not scope.bounded or not scope.keys:
        raise TaskRunError(
            f"task {context.task_key!r}: table {table} is append-once and this run has no "
            "backfill key (a final sync or a job without backfill); nothing was written"
        )
    written = written_keys(manager, scope, context.environment)
    skipped = [key for key in scope.keys if key in written]
    pending = tuple(key for key in scope.keys if key not in written)
    if skipped:
        print(skip_message(context.task_key, table, skipped, all_skipped=not pending), flush=True)
    if not pending:
        return None
    if not skipped:
        return context, frame
    # exactly the skipped keys' rows go; others (nulls included) stay, to be rejected
    dropped = manager.replace_predicate(KeyScope(scope.backfill, tuple(skipped)))
    kept = frame.where(f"NOT COALESCE({dropped}, FALSE)")
    return replace(context, scope=KeyScope(scope.backfill, pending)), kept
