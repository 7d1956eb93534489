"""The deadline monitor job of a job with ``Deadline(..., monitor=DeadlineMonitor(...))``.

``dbxdec generate`` writes it beside the job as ``<job>__deadline_monitor``: one
``python_wheel_task`` running the ``dbxdec-monitor`` entry point of dbxdec's own wheel
(installed beside the project's, like every generated task's), on the monitor's Quartz
schedule in the deadline's time zone, on the job's compute (its cluster spec, or the
serverless environment). The run's trigger time reaches the task as the job parameter
``backfill_run_time`` (``{{job.trigger.time.timestamp_ms}}``), pushed down to the
keyword wheel task (https://docs.databricks.com/aws/en/jobs/job-parameters, "Job
parameter pushdown").

The monitor's runs fail when keys newly become overdue (see
:mod:`..runtime.running.deadline_monitor`); the user's ``email_notifications`` /
``webhook_notifications`` on the monitor job deliver that failure: Databricks sends a
job's notifications on its run events (https://docs.databricks.com/aws/en/jobs/notifications),
and its API has no call that sends an arbitrary message (the notification destinations API
only creates, reads, updates and deletes destinations: databricks-sdk
``NotificationDestinationsAPI``).
"""

from __future__ import annotations

from typing import Any

from ..backfill.deadline import MONITOR_ENTRY_POINT, MONITOR_JOB_SUFFIX, MONITOR_TASK_KEY
from ..backfill.wire import BACKFILL_RUN_TIME_PARAM, JOB_PARAM, MODULE_PARAM, RUN_TIME_DEFAULT
from ..definitions import JobDefinition
from .framework_wheel import FRAMEWORK_DISTRIBUTION
from .options import CodegenOptions
from .settings_values import plain_copy


def monitor_job_name(job: JobDefinition) -> str:
    """``<job>__deadline_monitor``."""
    return f"{job.name}{MONITOR_JOB_SUFFIX}"


def monitor_job_resource(job: JobDefinition, options: CodegenOptions) -> dict[str, Any] | None:
    """The monitor job's settings, or ``None`` when ``job`` declares no monitor."""
    deadlines = job.deadlines
    monitor = deadlines.deadline.monitor if deadlines is not None else None
    if deadlines is None or monitor is None:
        return None
    schedule: dict[str, Any] = {
        "quartz_cron_expression": monitor.schedule,
        "timezone_id": deadlines.tz,
    }
    if options.pause_schedules:
        schedule["pause_status"] = "PAUSED"
    wheel = {
        "package_name": FRAMEWORK_DISTRIBUTION,
        "entry_point": MONITOR_ENTRY_POINT,
        "named_parameters": {JOB_PARAM: job.name, MODULE_PARAM: job.fn.__module__},
    }
    task: dict[str, Any] = {"task_key": MONITOR_TASK_KEY, "python_wheel_task": wheel}
    resource: dict[str, Any] = {
        "name": monitor_job_name(job),
        "description": (
            f"dbxdec deadline monitor of {job.name}: a run fails, listing them, when keys "
            "of the job newly become overdue"
        ),
        "parameters": [{"name": BACKFILL_RUN_TIME_PARAM, "default": RUN_TIME_DEFAULT}],
        "schedule": schedule,
        "max_concurrent_runs": 1,  # two runs at once would both alert a new key
    }
    if job.cluster is not None:
        resource["job_clusters"] = [
            {"job_cluster_key": job.cluster.name, "new_cluster": plain_copy(job.cluster.spec)}
        ]
        task["job_cluster_key"] = job.cluster.name
        task["libraries"] = [{"whl": wheel} for wheel in options.wheels]
    else:
        resource["environments"] = [
            {
                "environment_key": options.environment_key,
                "spec": {
                    "environment_version": options.environment_version,
                    "dependencies": list(options.wheels),
                },
            }
        ]
        task["environment_key"] = options.environment_key
    resource["tasks"] = [task]
    resource.update(plain_copy(monitor.notifications()))
    return resource
