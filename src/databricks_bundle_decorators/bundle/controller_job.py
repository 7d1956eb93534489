"""The ``dbxdec_controller`` job: the controller of detached backfills (issue 28).

``dbxdec generate`` writes it beside the jobs when any job has a backfill definition:
one ``python_wheel_task`` running the ``dbxdec-controller`` entry point of dbxdec's own
wheel (installed beside the project's, like every generated task's) on serverless
compute. A run drives one backfill; its job parameters ``backfill_id``, ``job_id`` and
``generation`` (defaults ``""``) reach the keyword wheel task by push-down
(https://docs.databricks.com/aws/en/jobs/job-parameters, "Job parameter pushdown"), and
the task's own named parameters carry ``{{job.run_id}}`` and ``{{job.id}}``
(https://docs.databricks.com/aws/en/jobs/dynamic-value-references).

Settings, each for a reason:

- ``max_concurrent_runs: 100``, ``queue.enabled: true``: one run per running backfill,
  and a start beyond the limit waits in the queue instead of being skipped;
- task ``max_retries: -1`` ("retry indefinitely", databricks-sdk ``jobs.Task``) and
  ``retry_on_timeout: true``: a controller that dies or times out is followed by the next
  attempt of the same run, which takes over from the journal;
- task ``timeout_seconds``: above the hand-over time (a run hands over after 3 h), so a
  stuck controller is ended and retried. It sits on the task, beside ``retry_on_timeout``:
  the task's timeout is "applied to each run of this job task" and ``retry_on_timeout``
  retries a task that timed out (databricks-sdk ``jobs.Task``); a job-level timeout ends
  the whole run, which nothing retries.

``[tool.dbxdec.controller]`` in ``pyproject.toml`` may set ``run_as_service_principal``
(the job's ``run_as``; without it the job runs as its creator, ``jobs.JobRunAs``) and
``secret_scope`` (where that principal's OAuth client id and secret are, when the SDK's
default auth does not reach the workspace from the run: see ``launch/control/auth.py``).
Neither is a credential.

What the controller's principal needs, each from the jobs access-control table ("Job
ACLs", https://docs.databricks.com/aws/en/security/auth/access-control) or the page of the
object named:

- ``CAN_MANAGE_RUN`` on each backfilled job (run now, cancel run), and on this job (a
  handover starts its next run);
- ``CAN_MANAGE`` (or ``IS_OWNER``) on each dependant of a ``--downstream`` backfill: it
  holds and restores their triggers with ``jobs/update`` ("Edit job settings").
  ``--detach`` reads that level from the dependants' ACLs and the principal's SCIM groups
  before anything starts, and refuses in one line without it; each controller run checks
  again (through ``Me``) before it holds anything;
- ``CAN USE`` on the SQL warehouse of a catch-up (start it, run on it: "SQL warehouse
  access control",
  https://docs.databricks.com/security/auth-authz/access-control/sql-endpoint-acl.html),
  and ``SELECT`` on the tables it reads (with ``USE CATALOG``/``USE SCHEMA`` on their
  parents: https://docs.databricks.com/en/data-governance/unity-catalog/manage-privileges/privileges.html).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..backfill.wire.controller import (
    BACKFILL_ID_PARAM,
    CONTROLLER_ENTRY_POINT,
    CONTROLLER_JOB,
    CONTROLLER_JOB_ID_PARAM,
    CONTROLLER_MAX_CONCURRENT_RUNS,
    CONTROLLER_TASK_KEY,
    DEFAULT_HANDOVER_AFTER,
    GENERATION_PARAM,
    JOB_ID_PARAM,
    RUN_ID_PARAM,
)
from ..definitions import JobDefinition
from ..errors import UsageError
from .framework_wheel import FRAMEWORK_DISTRIBUTION
from .options import CodegenOptions

SECRET_SCOPE_PARAM = "secret_scope"
CONTROLLER_TIMEOUT_SECONDS = int(DEFAULT_HANDOVER_AFTER) + 3600
"""A run hands over after 3 h; one an hour past that is stuck and is retried."""
_KNOWN = ("run_as_service_principal", "secret_scope")


def controller_settings(settings: Mapping[str, Any]) -> dict[str, str]:
    """``[tool.dbxdec.controller]``, checked.

    Raises:
        UsageError: an unknown key or a value that is not a non-empty string.
    """
    table = settings.get("controller", {})
    if not isinstance(table, Mapping):
        raise UsageError("[tool.dbxdec.controller] must be a table")
    found: dict[str, str] = {}
    for key, value in table.items():
        if key not in _KNOWN:
            raise UsageError(f"[tool.dbxdec.controller] {key}: unknown setting (known: {_KNOWN})")
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"[tool.dbxdec.controller] {key}: expected a non-empty string")
        found[key] = value.strip()
    return found


def controller_job_resource(
    jobs: Iterable[JobDefinition], options: CodegenOptions, settings: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The controller job's settings, or ``None`` when no job has a backfill."""
    if not any(job.backfill is not None for job in jobs):
        return None
    config = controller_settings(settings)
    named = {RUN_ID_PARAM: "{{job.run_id}}", CONTROLLER_JOB_ID_PARAM: "{{job.id}}"}
    if "secret_scope" in config:
        named[SECRET_SCOPE_PARAM] = config["secret_scope"]
    task: dict[str, Any] = {
        "task_key": CONTROLLER_TASK_KEY,
        "python_wheel_task": {
            "package_name": FRAMEWORK_DISTRIBUTION,
            "entry_point": CONTROLLER_ENTRY_POINT,
            "named_parameters": named,
        },
        "max_retries": -1,
        "retry_on_timeout": True,
        "timeout_seconds": CONTROLLER_TIMEOUT_SECONDS,
        "environment_key": options.environment_key,
    }
    resource: dict[str, Any] = {
        "name": CONTROLLER_JOB,
        "description": (
            "dbxdec controller of detached backfills (dbxdec backfill ... --detach): one run "
            "per backfill, handing over to a fresh run every few hours"
        ),
        "parameters": [
            {"name": name, "default": ""}
            for name in (BACKFILL_ID_PARAM, JOB_ID_PARAM, GENERATION_PARAM)
        ],
        "max_concurrent_runs": CONTROLLER_MAX_CONCURRENT_RUNS,
        "queue": {"enabled": True},
        "environments": [
            {
                "environment_key": options.environment_key,
                "spec": {
                    "environment_version": options.environment_version,
                    "dependencies": list(options.wheels),
                },
            }
        ],
        "tasks": [task],
    }
    if "run_as_service_principal" in config:
        resource["run_as"] = {"service_principal_name": config["run_as_service_principal"]}
    return resource
