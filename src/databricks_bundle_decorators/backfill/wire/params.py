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
"""Empty (an ordinary run), except in the runs the launcher orders to do something else:
then it carries an order (:mod:`.order`)."""
BACKFILL_FULL_REFRESH_PARAM = "backfill_full_refresh"
"""Empty, except in the runs of ``dbxdec backfill --full-refresh``: ``stage:<backfill id>``
in its slices (tables are written to staging tables) and ``swap:<backfill id>`` in its final
run (each staging table is checked whole, then replaces its table in one commit); see
:class:`~.refresh.FullRefreshOrder`."""
BACKFILL_FORCE_REWRITE_PARAM = "backfill_force_rewrite"
"""``"true"`` in the runs of ``dbxdec backfill --force-rewrite`` (and ``dbxdec run
--force-rewrite``): append-once outputs rewrite the run's keys they already hold instead
of skipping them (see :mod:`..runtime.io.append_once`); ``"false"`` otherwise."""
BACKFILL_TASKS_PARAM = "backfill_tasks"
"""Empty (every task runs), or the comma-separated tasks a run of ``dbxdec backfill
--tasks``/``--skip-tasks`` runs (on Databricks with run-now's ``only`` as well): a task
whose input comes from a task that does not run checks, before it runs, that the
upstream table holds the run's keys."""
BACKFILL_CHECKS_PARAM = "backfill_checks"
"""``"on"`` (the default): every task judges its checks before it writes; ``"off"`` in the
runs of ``dbxdec backfill --no-checks``: checks are skipped (a failing check does not fail
the slice, and no check results are recorded)."""
BACKFILL_ID_PARAM = "backfill_id"
"""Empty, except in the runs of ``dbxdec backfill``: the backfill's id. Every Delta commit
of the run carries it in its ``userMetadata`` (see :mod:`...runtime.storage.table_name`), so
``dbxdec backfill undo`` finds the backfill's commits by its id alone, however many runs
it took."""
NAIVE_RUN_TIME_ZONE = "UTC"
"""How an ISO datetime without an offset in ``backfill_run_time`` is read (e.g. from
Databricks' Backfill dialog, ``{{backfill.iso_datetime}}``)."""

BACKFILL_PARAMS: tuple[str, ...] = (
    BACKFILL_KEY_PARAM,
    BACKFILL_START_KEY_PARAM,
    BACKFILL_EXACT_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    BACKFILL_FULL_REFRESH_PARAM,
    BACKFILL_FORCE_REWRITE_PARAM,
    BACKFILL_TASKS_PARAM,
    BACKFILL_CHECKS_PARAM,
    BACKFILL_ID_PARAM,
    ORDER_PARAM,
)
BACKFILL_PARAM_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        BACKFILL_KEY_PARAM: "",
        BACKFILL_START_KEY_PARAM: "",
        BACKFILL_EXACT_PARAM: "false",
        BACKFILL_RUN_TIME_PARAM: RUN_TIME_DEFAULT,
        BACKFILL_FULL_REFRESH_PARAM: "",
        BACKFILL_FORCE_REWRITE_PARAM: "false",
        BACKFILL_TASKS_PARAM: "",
        BACKFILL_CHECKS_PARAM: "on",
        BACKFILL_ID_PARAM: "",
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
