"""A backfill that names no keys runs every key of its definition: how many runs that
is, so the command can ask first (issue 25: 91 keys ran silently; an open-ended
definition on Databricks is thousands of runs)."""

from __future__ import annotations

from ...definitions import Registry
from .request import BackfillRequest


def full_range_runs(registry: Registry, request: BackfillRequest) -> int | None:
    """The number of runs of ``request`` when it launches every key of its job's
    definition (no ``--start``, ``--end`` or ``--keys``, ``--rerun all``); ``None``
    when it names a range or keys, or picks keys from history (``--rerun failed|missing``,
    ``catchup``). With ``--batch-size auto`` (the size is chosen later), the keys.

    Raises:
        UsageError: an unknown job, a job without a backfill definition.
    """
    named = request.start is not None or request.end is not None or bool(request.keys)
    if named or request.rerun != "all" or request.catchup:
        return None
    size = request.batch_size if isinstance(request.batch_size, int) else 1
    return len(request.plan(registry.get(request.job), batch_size=size).slices)
