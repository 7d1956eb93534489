"""The wire contract: every name and encoding that crosses launcher -> job -> ``dbxdec-run``.

Bundle codegen (the producer), the launcher, the local runner and the runtime entry point
(the consumers) all import these names, so they cannot drift apart. It lives in the
lowest layer so that ``dbxdec-run`` needs nothing from bundle generation.

The ``python_wheel_task`` contract: what codegen writes and ``dbxdec-run`` reads.

Every generated task runs ``dbxdec-run`` with these named parameters (besides the job
parameters, pushed down by name)::

    dbxdec-run --dbxdec_job=sales --dbxdec_task=clean --dbxdec_module=pkg.sales \\
        --dbxdec_run_id=550315892394120 ...

"""

from __future__ import annotations

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
