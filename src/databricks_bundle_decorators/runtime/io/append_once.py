"""Append-once outputs (seed 004's ``INSERT INTO ONCE``): each backfill key is written once.

``SparkTableIoManager(..., write="append_once")`` appends a run's keys instead of
replacing them, and only the keys the table does not hold yet:

- A key is **written** when the table has at least one row for it (inside the key's
  window, with a ``time_column``), counted as :mod:`..programs.presence` counts keys: one
  ``GROUP BY`` over the partition column, filtered by the IoManager's read predicate
  (quoted key literals). A key for which a run produced no rows is *not* written (Delta
  keeps no empty partition), so the next run of that key writes it.
- Keys already written are skipped with a message naming them; the run's other keys
  are appended in one commit. A run whose keys are all written computes and commits
  nothing: the table keeps its version.
- The append carries the run's Delta ``txnAppId``/``txnVersion`` (see
  :meth:`~.spark_table.SparkTableIoManager.transaction`): a retried attempt of the same
  run that finds its keys unwritten (the first attempt committed after the retry
  looked) is skipped by Delta itself, never appended twice.
- ``--force-rewrite`` (``force_rewrite`` in the run's ``dbxdec_order``) writes the run's
  keys as a replacing output does: one ``replaceWhere`` commit over exactly those keys.

Example:
    A table holding ``2024-01-01``; a run of ``2024-01-01..2024-01-02`` prints
    ``task 'load': table main.raw.events already holds key 2024-01-01 (append-once);
    skipped it (--force-rewrite rewrites it)`` and appends ``2024-01-02`` only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import Any, Literal, Protocol

from ...backfill.scope import KeyScope
from ...definitions.contracts import OutputContext, RunEnvironment
from ..checks.keyed_table import KeyedTable
from ..core.errors import TaskRunError

WriteMode = Literal["replace", "append_once"]
WRITE_MODES: tuple[WriteMode, ...] = ("replace", "append_once")
_SHOWN_KEYS = 5


class AppendOnceTable(KeyedTable, Protocol):
    """What an append-once write needs of its table's IoManager
    (:class:`~.spark_table.SparkTableIoManager`): a keyed table that can also select a
    scope's rows.

    Declared here, below that IoManager (which calls this module), so that this module
    needs nothing of it.
    """

    def read_predicate(self, scope: KeyScope) -> str | None:
        """The SQL predicate selecting ``scope``'s rows."""
        ...


def check_write_mode(write: object, *, partition_column: str | None, format: str) -> WriteMode:
    """The ``write`` argument of :class:`~.spark_table.SparkTableIoManager`, checked.

    Raises:
        ValueError: not a write mode, or ``"append_once"`` without a partition column
            or on parquet (whose commits carry no transaction id).
    """
    if write not in WRITE_MODES:
        raise ValueError(f"write must be 'replace' or 'append_once', got {write!r}")
    if write == "append_once" and partition_column is None:
        raise ValueError("write='append_once' writes each key once: it needs a partition_column")
    if write == "append_once" and format == "parquet":
        raise ValueError(
            "write='append_once' needs Delta (its appends are idempotent by transaction id): "
            "drop format='parquet'"
        )
    return "append_once" if write == "append_once" else "replace"


def _key_text(value: Any) -> str:
    """A partition value as a key: a ``DATE`` column holds daily keys as dates."""
    return value.isoformat() if isinstance(value, date) else str(value)


def written_keys(
    manager: AppendOnceTable, scope: KeyScope, environment: RunEnvironment
) -> frozenset[str]:
    """The keys of ``scope`` that have rows in the manager's table (none if it does not
    exist): one ``GROUP BY`` over the partition column (a two-dimensional table's static
    column too: its keys are ``STATIC:TIME``) under the read predicate."""
    column = manager.partition_column
    assert column is not None  # check_write_mode requires one for append-once
    static = manager.static_column
    columns = [column] if static is None else [static, column]
    frame = manager.table_format(environment).read(
        environment.spark,
        manager.table_ref(environment),
        partition_column=column,
        keys=scope.keys,
    )
    if frame is None:
        return frozenset()
    predicate = manager.read_predicate(scope)
    if predicate is not None:
        frame = frame.where(predicate)
    wanted = set(scope.keys)
    found = (
        ":".join(_key_text(row[c]) for c in columns)
        for row in frame.groupBy(*columns).count().collect()
    )
    return frozenset(key for key in found if key in wanted)


def skip_message(task_key: str, table: str, skipped: Sequence[str], *, all_skipped: bool) -> str:
    """The line printed for the keys an append-once write skips.

    Example:
        >>> line = skip_message("load", "main.raw.events", ["2024-01-01"], all_skipped=True)
        >>> line[:64]
        "task 'load': table main.raw.events already holds key 2024-01-01 "
        >>> line[64:]
        '(append-once); nothing was written, the table keeps its version (--force-rewrite \
rewrites it)'
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
    """The write an append-once output still owes: the context narrowed to the run's
    keys the table does not hold and the output without the rows of the others; ``None``
    (after printing the skip message) when the table holds every key.

    Raises:
        TaskRunError: the run has no backfill keys (a final sync, or a job without a
            backfill definition), so there is nothing to write once per key.
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
    assert dropped is not None  # bounded scope, partitioned table
    kept = frame.where(f"NOT COALESCE({dropped}, FALSE)")
    return replace(context, scope=KeyScope(scope.backfill, pending)), kept
