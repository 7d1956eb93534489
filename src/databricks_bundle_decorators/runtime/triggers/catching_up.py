"""A catching-up scheduled run: the keys missing since the last key that has data, or
since the key of the job's newest successful run.

A job whose time backfill has ``catch_up=CatchUp(...)``: a run without a
``backfill_key`` (a scheduled run) processes every key after the last done key up to the
current key, oldest first, capped by ``max_keys``; the rest are pending (shown by
``dbxdec status``). The last done key is the last key present in the job's output tables
(``since="last_present"``; :mod:`..programs.presence`: every partitioned output has rows
for it), or the key of the job's newest successful run in its run history
(``since="last_success"``; :mod:`.run_history`, read with the job run's own credentials,
:mod:`..core.job_auth`). The first task resolves and stores them (:mod:`.trigger_state`),
so later tasks, which see the first task's writes, process the same keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ...backfill.changed_keys import catch_up_plan, with_lookback
from ...backfill.time_backfill import CatchUp, TimeBackfill
from ...backfill.wire.params import JOB_ID_PARAM, JOB_ID_VALUE, job_id_of
from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ...definitions.triggers import FileArrival
from ...errors import UsageError
from ..core.errors import TaskRunError
from ..core.job_auth import job_run_client
from ..programs.presence import keyed_tables, read_presence
from .run_history import newest_success, run_key
from .trigger_state import StoredRun, TriggerState

STATE_TABLE_NAME = "dbxdec_trigger_state"


def state_table(
    job: JobDefinition, setting: CatchUp | FileArrival, environment: RunEnvironment
) -> str:
    """The state table of a catching-up or file-triggered job: the one ``setting``
    declares, else ``dbxdec_trigger_state`` in the schema of its first partitioned output
    table.

    Raises:
        UsageError: none declared and the job writes no partitioned table.
    """
    if setting.state_table:
        return setting.state_table
    tables, _ = keyed_tables(job, environment)
    owner = "CatchUp" if isinstance(setting, CatchUp) else f"FileArrival(url={setting.url!r})"
    if not tables:
        raise UsageError(
            f"job {job.name!r}: {owner} needs state_table='catalog.schema.table' (the job "
            "writes no partitioned table to put it beside)"
        )
    return f"{sorted(tables)[0].rsplit('.', 1)[0]}.{STATE_TABLE_NAME}"


def resolve_catch_up(
    job: JobDefinition,
    catch_up: CatchUp,
    now: datetime,
    environment: RunEnvironment,
    params: Mapping[str, str],
    state: TriggerState,
) -> StoredRun:
    """The keys of a catching-up run whose logical time is ``now``.

    Raises:
        TaskRunError: ``since="last_success"`` and the run history cannot be read (no job
            id, no credentials, a refusal: one line naming the remedy).
    """
    backfill = job.backfill
    assert isinstance(backfill, TimeBackfill)
    if catch_up.since == "last_success":
        done = _last_success(job, backfill, catch_up, params, state)
    else:
        current = backfill.current_key(now=now)
        candidates = backfill.keys(None, current, now=now)
        presence = read_presence(job, candidates, environment)
        absent = set(presence.missing(candidates))
        done = [k for k in candidates if k not in absent]
    plan = catch_up_plan(backfill, done, now, catch_up.max_keys)
    return StoredRun(with_lookback(backfill, plan.run), plan.run, {}, plan.pending)


def _last_success(
    job: JobDefinition,
    backfill: TimeBackfill,
    catch_up: CatchUp,
    params: Mapping[str, str],
    state: TriggerState,
) -> list[str]:
    """The key of the job's newest successful run (``[]``: none in its run history)."""
    job_id = job_id_of(params)
    if job_id is None:
        raise TaskRunError(
            f"job {job.name!r}: CatchUp(since='last_success') reads the job's run history "
            f"and needs its id in job parameter {JOB_ID_PARAM} ({JOB_ID_VALUE} on "
            f"Databricks; in a local run pass -p {JOB_ID_PARAM}=N with DATABRICKS_HOST and "
            "DATABRICKS_TOKEN set)"
        )
    from databricks.sdk.errors.base import DatabricksError

    try:
        client = job_run_client(catch_up.secret_scope or "")
        newest = newest_success(client, job_id)
    except UsageError as exc:
        raise TaskRunError(f"job {job.name!r}: CatchUp(since='last_success'): {exc}") from None
    except (DatabricksError, OSError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise TaskRunError(
            f"job {job.name!r}: CatchUp(since='last_success') could not read the run "
            f"history of job {job_id} (jobs/runs/list: {first})"
        ) from None
    if newest is None:
        return []
    key = run_key(backfill, newest, state.stored_run(str(newest.run_id)))
    return [key] if key is not None else []
