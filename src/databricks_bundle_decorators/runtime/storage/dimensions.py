"""Predicates of two-dimensional tables (static value x time key, e.g. region x day):
a run's keys grouped by static value, one ``IN`` list (and set of windows) per value.

Example:
    >>> from databricks_bundle_decorators.backfill import (
    ...     DailyBackfill, MultiBackfill, StaticBackfill)
    >>> multi = MultiBackfill(StaticBackfill(["eu", "us"]), DailyBackfill("2024-01-01"))
    >>> scope = KeyScope(multi, ("eu:2024-01-01", "eu:2024-01-02", "us:2024-01-02"))
    >>> for part in per_static_predicate(scope, "region", "day", None).split(" OR "):
    ...     print(part)
    ((`region` = 'eu') AND (`day` IN ('2024-01-01', '2024-01-02')))
    ((`region` = 'us') AND (`day` IN ('2024-01-02')))
"""

from __future__ import annotations

from ...backfill.multi import MultiBackfill
from ...backfill.scope import KeyScope
from ..core.errors import TaskRunError
from ..core.predicates import (
    conjunction,
    disjunction,
    equals_predicate,
    keys_predicate,
    windows_predicate,
)


def is_two_dimensional(table: str, static_column: str | None, scope: KeyScope) -> bool:
    """Whether ``scope``'s keys are ``STATIC:TIME``.

    Raises:
        TaskRunError: ``static_column`` does not match the job's definition.
    """
    multi = isinstance(scope.backfill, MultiBackfill)
    if multi and static_column is None:
        kind = scope.backfill.kind if scope.backfill is not None else ""
        raise TaskRunError(
            f"table {table} is written by a job with {kind} keys (STATIC:TIME): give its "
            "SparkTableIoManager static_column=<the column holding the static value>"
        )
    if not multi and static_column is not None:
        kind = "no backfill" if scope.backfill is None else f"{scope.backfill.kind} keys"
        raise TaskRunError(
            f"table {table} has static_column={static_column!r}, but the job has {kind}: "
            "static_column belongs to jobs with backfill=MultiBackfill(...)"
        )
    return multi


def per_static_predicate(
    scope: KeyScope,
    static_column: str,
    key_column: str,
    time_column: str | None,
    *,
    keys: bool = True,
) -> str:
    """``(static = 's' AND key IN (...) AND time in s's windows) OR ...`` over the scope's
    static values; ``keys=False`` leaves out the ``IN`` list, ``time_column=None`` the
    windows."""
    backfill = scope.backfill
    assert isinstance(backfill, MultiBackfill)
    parts: list[str | None] = []
    for static, times in backfill.by_static(scope.keys).items():
        windows = None
        if time_column is not None:
            spans = KeyScope(backfill.time, tuple(times)).spans()
            windows = windows_predicate(time_column, spans)
        parts.append(
            conjunction(
                equals_predicate(static_column, static),
                keys_predicate(key_column, times) if keys else None,
                windows,
            )
        )
    return disjunction(*parts) or "FALSE"
