"""The keys a running task writes, for task code that computes with lookback."""

from __future__ import annotations

from ...backfill import current_run_context, run_keys_of


def get_written_keys() -> list[str]:
    """The keys this run writes: ``get_backfill_keys()`` without the lookback keys.

    A task that reads ``lookback`` extra keys returns rows only for these keys; the
    Spark table IoManager rejects rows outside them.

    Example:
        With ``DailyBackfill("2024-01-01", lookback=2)`` and ``backfill_key=2024-01-08``
        (a run context set by hand, as the runtime sets it for a task run):

        >>> from datetime import datetime, timezone
        >>> from databricks_bundle_decorators import DailyBackfill, get_backfill_keys
        >>> from databricks_bundle_decorators.backfill.context import RunContext, run_context
        >>> context = RunContext(params={"backfill_key": "2024-01-08"},
        ...                      backfill=DailyBackfill("2024-01-01", lookback=2),
        ...                      now=datetime(2024, 1, 9, 6, tzinfo=timezone.utc))
        >>> with run_context(context):
        ...     get_backfill_keys(), get_written_keys()
        (['2024-01-06', '2024-01-07', '2024-01-08'], ['2024-01-08'])

    Raises:
        RuntimeError: outside a task run, or the key cannot be derived.
        ValueError: the key is malformed or out of bounds.
    """
    context = current_run_context()
    if context is None:
        raise RuntimeError(
            "no run context: the written keys are only known inside a task run "
            "(dbxdec-run on Databricks, or the local runner)"
        )
    return list(run_keys_of(context).written)
