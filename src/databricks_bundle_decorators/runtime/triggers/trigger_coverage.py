"""What a run given its keys covered, for a table-triggered job.

A run of a ``TableUpdate`` job with an explicit ``backfill_key`` (a launched backfill,
a ``--downstream`` slice, a run-now with a key) is not a triggered run: it neither
reads nor moves the processed-version watermark (:mod:`.triggered`). It did process
its keys, though, against its sources as they were when it read them. So that the
catch-up after a backfill (``launch/operations/trigger_catch_up.py``) does not run
those keys again, such a run records what it covered in the job's state table
(:mod:`.trigger_state`):

============  ==============  ================================================
kind          name            value
============  ==============  ================================================
``read``      task key        JSON: the run's written keys, each source's version
``covered``   ``""``          JSON: the same, once every task of the run committed
============  ==============  ================================================

Each task reads its sources' latest versions (``DESCRIBE HISTORY t LIMIT 1``,
https://docs.databricks.com/aws/en/delta/history) *before* it runs, so the data it
reads is at least that new; the ``covered`` row takes, per source, the smallest
version any task of the run read. A change at version ``v`` of a source is covered for
key ``K`` only by a ``covered`` row holding ``K`` at a version ``>= v``: the record
never claims more than the run read (a commit landing between the version read and
the data read is processed again by the catch-up, which is harmless: writes are
idempotent). A run that fails records no ``covered`` row; a repair of it adds the
missing tasks' ``read`` rows under the same job run (``{{job.run_id}}``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

from ...backfill.wire import BACKFILL_KEY_PARAM
from ...definitions.contracts import RunEnvironment
from ...definitions.triggers import TableUpdate
from ..storage.delta_history import sql_target
from .trigger_state import TriggerState, job_run_of, table_ref

if TYPE_CHECKING:
    from ..programs.run_kinds import TaskRunRequest

__all__ = ["COVERED", "READ", "coverage_recorder", "covered_value"]

READ = "read"
COVERED = "covered"


def covered_value(keys: Sequence[str], versions: Mapping[str, int]) -> str:
    """The ``value`` of a ``read`` or ``covered`` row."""
    return json.dumps({"keys": list(keys), "versions": dict(versions)}, sort_keys=True)


def coverage_recorder(
    request: TaskRunRequest, environment: RunEnvironment
) -> Callable[[], None] | None:
    """What a keyed task run of a table-triggered job records once it has committed
    (see the module docstring), its sources' versions read now, before the task runs;
    ``None`` for a run no coverage is recorded for."""
    trigger = request.job.trigger
    keys = request.keys
    if (
        request.kind is None
        or request.kind.name != "task"
        or not isinstance(trigger, TableUpdate)
        or not request.params.get(BACKFILL_KEY_PARAM)
        or keys is None
        or not environment.run_id
    ):
        return None
    versions = {s.name: _latest_version(environment, s.name) for s in trigger.sources}
    state = TriggerState(environment, trigger.state_table, request.job.name)
    return partial(_record, state, job_run_of(environment.run_id), request, keys.written, versions)


def _record(
    state: TriggerState,
    run: str,
    request: TaskRunRequest,
    written: Sequence[str],
    versions: Mapping[str, int],
) -> None:
    job = request.job
    tasks = set(job.graph.topological_order())
    value = covered_value(written, versions)
    read_row = (job.name, run, READ, request.task_key, value)
    reads = {str(r[2]): json.loads(r[3]) for r in state.rows_of(READ, run)}
    reads[request.task_key] = json.loads(value)
    if not tasks <= set(reads) or state.rows_of(COVERED, run):
        state.append_rows([read_row])
        return
    lowest: dict[str, int] = {}
    for read in reads.values():
        for name, version in read["versions"].items():
            lowest[name] = min(int(version), lowest.get(name, int(version)))
    state.append_rows([read_row, (job.name, run, COVERED, "", covered_value(written, lowest))])


def _latest_version(environment: RunEnvironment, name: str) -> int:
    ref = sql_target(table_ref(name, environment))
    row = environment.spark.sql(f"DESCRIBE HISTORY {ref} LIMIT 1").first()
    return int(row["version"])
