"""The names and defaults of the job and task parameters dbxdec's jobs declare."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# -- job parameters of a job with a backfill definition ---------------------------------

BACKFILL_KEY_PARAM = "backfill_key"
BACKFILL_START_KEY_PARAM = "backfill_start_key"
BACKFILL_EXACT_PARAM = "backfill_exact"
BACKFILL_RUN_TIME_PARAM = "backfill_run_time"
"""The run's logical time: the instant keys are derived from when ``backfill_key`` is empty
(a scheduled run), with ``data_lag``, lookback and schedule gaps applied."""
RUN_TIME_DEFAULT = "{{job.trigger.time.timestamp_ms}}"
"""Databricks' dynamic value reference for the trigger time, epoch milliseconds: a repair
run or a retried task resolves the same keys as the run's first attempt."""
ORDER_PARAM = "dbxdec_order"
"""Empty (an ordinary run), except in the runs the launcher starts: then it carries an
order (:mod:`.order`): a backfill run's id and options, a full refresh's stage or swap,
an undo, presence or measurement run."""
NAIVE_RUN_TIME_ZONE = "UTC"
"""How an ISO datetime without an offset in ``backfill_run_time`` is read (e.g. from
Databricks' Backfill dialog, ``{{backfill.iso_datetime}}``)."""

BACKFILL_PARAMS: tuple[str, ...] = (
    BACKFILL_KEY_PARAM,
    BACKFILL_START_KEY_PARAM,
    BACKFILL_EXACT_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    ORDER_PARAM,
)
BACKFILL_PARAM_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        BACKFILL_KEY_PARAM: "",
        BACKFILL_START_KEY_PARAM: "",
        BACKFILL_EXACT_PARAM: "false",
        BACKFILL_RUN_TIME_PARAM: RUN_TIME_DEFAULT,
        ORDER_PARAM: "",
    }
)
"""Every backfill job parameter and its default, in the order jobs declare them."""

ENTRY_POINT = "dbxdec-run"
JOB_PARAM = "dbxdec_job"
TASK_PARAM = "dbxdec_task"
MODULE_PARAM = "dbxdec_module"
FOR_EACH_INPUT_PARAM = "dbxdec_input"
"""Named parameter of a for-each iteration: the element, as ``{{input}}``."""
FOR_EACH_INPUT_VALUE = "{{input}}"
RUN_ID_PARAM = "dbxdec_run_id"
"""The Databricks job run's id: the run's identity in Delta's ``txnAppId``, so a retried
attempt of a task never commits its write twice."""
RUN_ID_VALUE = "{{job.run_id}}-{{job.repair_count}}"
"""Databricks' dynamic value references for the job run id and its repair count: the same
for every task, task retry and for-each iteration of one run, so a retried attempt is
skipped; a repair of the run (a deliberate re-run) gets a new id and commits again."""
JOB_ID_PARAM = "dbxdec_job_id"
"""Declared only by a job whose time backfill has ``CatchUp(since="last_success")``: the
job's own id, so a task can read the job's run history (``jobs/runs/list``) to find its
newest successful run (see :mod:`...runtime.triggers.run_history`)."""
JOB_ID_VALUE = "{{job.id}}"
"""Databricks' dynamic value reference for "the unique identifier assigned to the job"
(https://docs.databricks.com/aws/en/jobs/dynamic-value-references); a run outside
Databricks passes the id itself (``-p dbxdec_job_id=N``)."""


def job_id_of(params: Mapping[str, str]) -> int | None:
    """The job id a run was given in :data:`JOB_ID_PARAM`; ``None`` when it is empty or
    was left unrendered (a local run with the default).

    >>> job_id_of({"dbxdec_job_id": "42"}), job_id_of({"dbxdec_job_id": "{{job.id}}"})
    (42, None)
    """
    value = params.get(JOB_ID_PARAM, "").strip()
    return int(value) if value.isdigit() else None
