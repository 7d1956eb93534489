"""A catching-up scheduled run: the keys missing since the last key that has data.

A job whose time backfill has ``catch_up=CatchUp(...)``: a run without a
``backfill_key`` (a scheduled run) processes every key after the last key present in
the job's output tables (:mod:`..programs.presence`: every partitioned output has rows for it) up
to the current key, oldest first, capped by ``max_keys``; the rest are pending (shown
by ``dbxdec status``). The first task resolves and stores them (:mod:`.trigger_state`),
so later tasks, which see the first task's writes, process the same keys.
"""

from __future__ import annotations

from datetime import datetime

from ...backfill.catch_up import CatchUp
from ...backfill.changed_keys import catch_up_plan, with_lookback
from ...backfill.time_backfill import TimeBackfill
from ...definitions import JobDefinition
from ...errors import UsageError
from ..core.context import RunEnvironment
from ..programs.presence import keyed_tables, read_presence
from .trigger_state import StoredRun

STATE_TABLE_NAME = "dbxdec_trigger_state"


def catch_up_state_table(job: JobDefinition, catch_up: CatchUp, environment: RunEnvironment) -> str:
    """The state table of a catching-up job: the declared one, else
    ``dbxdec_trigger_state`` in the schema of its first partitioned output table.

    Raises:
        UsageError: none declared and the job writes no partitioned table.
    """
    if catch_up.state_table:
        return catch_up.state_table
    tables, _ = keyed_tables(job, environment)
    if not tables:
        raise UsageError(
            f"job {job.name!r}: CatchUp needs state_table='catalog.schema.table' (the job "
            "writes no partitioned table to put it beside)"
        )
    first = sorted(tables)[0]
    return f"{first.rsplit('.', 1)[0]}.{STATE_TABLE_NAME}"


def resolve_catch_up(
    job: JobDefinition, catch_up: CatchUp, now: datetime, environment: RunEnvironment
) -> StoredRun:
    """The keys of a catching-up run whose logical time is ``now``."""
    backfill = job.backfill
    assert isinstance(backfill, TimeBackfill)
    current = backfill.current_key(now=now)
    candidates = backfill.keys(None, current, now=now)
    presence = read_presence(job, candidates, environment)
    absent = set(presence.missing(candidates))
    present = [k for k in candidates if k not in absent]
    plan = catch_up_plan(backfill, present, now, catch_up.max_keys)
    return StoredRun(with_lookback(backfill, plan.run), plan.run, {}, plan.pending)
