"""JSON rendering of emulated jobs and runs, shaped like the Jobs 2.2 API responses.

For-each tasks: a for-each task runs its nested task once per element of ``inputs``
("Array for task to iterate on. This can be a JSON string or a reference to an array
parameter", databricks-sdk ``jobs.ForEachTask.inputs``); each iteration is a task run of
its own. ``runs/get`` on the for-each task's run id answers that one task in ``tasks``
and its iterations in ``iterations`` ("Only populated by for-each iterations. The parent
for-each task is located in tasks array", ``jobs.Run.iterations``), 100 a page with
``next_page_token`` ("Large arrays in the results will be paginated when they exceed 100
elements", ``JobsAPI.get_run``; the SDK's ``JobsExt.get_run`` pages "iterations" for a
"ForEach task run" and repeats its one task on every page). The emulator counts
iterations from a JSON array in ``inputs`` or a ``{{job.parameters.<name>}}`` reference to
one; a task-value reference counts none.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable

from ._emulator_records import JobRecord, JsonDict, RunRecord, page

# termination_details (code, type) of the newer ``status`` object, per result.
_TERMINATION: dict[str, tuple[str, str]] = {
    "SUCCESS": ("SUCCESS", "SUCCESS"),
    "SUCCESS_WITH_FAILURES": ("SUCCESS_WITH_FAILURES", "SUCCESS"),
    "FAILED": ("RUN_EXECUTION_ERROR", "CLIENT_ERROR"),
    "TIMEDOUT": ("CANCELED", "CLIENT_ERROR"),
    "CANCELED": ("USER_CANCELED", "SUCCESS"),
    "INTERNAL_ERROR": ("INTERNAL_ERROR", "INTERNAL_ERROR"),
    "MAXIMUM_CONCURRENT_RUNS_REACHED": ("MAX_CONCURRENT_RUNS_EXCEEDED", "CLIENT_ERROR"),
    "MAX_JOB_QUEUE_SIZE_EXCEEDED": ("MAX_JOB_QUEUE_SIZE_EXCEEDED", "CLIENT_ERROR"),
}


def job_json(job: JobRecord, user_name: str, *, expand_tasks: bool) -> JsonDict:
    """A job as ``jobs/get`` and ``jobs/list`` return it."""
    settings = copy.deepcopy(job.settings)
    # ``trigger.table_update.condition`` is accepted by create/update/reset but never
    # returned by jobs/get (databricks/cli#6315, verified on AWS; the CLI's fix #6442 stops
    # comparing it): a client that writes a GET's trigger back drops the condition.
    table_update = (settings.get("trigger") or {}).get("table_update")
    if isinstance(table_update, dict):
        table_update.pop("condition", None)
    if not expand_tasks:
        settings.pop("tasks", None)
        settings.pop("job_clusters", None)
    run_as = settings.get("run_as") or {}
    return {
        "job_id": job.job_id,
        "creator_user_name": user_name,
        # ``Job.run_as_user_name``: "the email of an active workspace user or the application
        # ID of a service principal that the job runs as", the creator's by default
        "run_as_user_name": run_as.get("user_name")
        or run_as.get("service_principal_name")
        or user_name,
        "created_time": job.created_time_ms,
        "settings": settings,
    }


def run_json(
    job: JobRecord,
    run: RunRecord,
    now: float,
    *,
    epoch_ms: Callable[[float], int],
    base_url: str,
    workspace_id: str,
    user_name: str,
    include_tasks: bool,
) -> JsonDict:
    """A run as ``runs/get`` and ``runs/list`` return it."""
    state = state_json(run)
    status = status_json(run)
    end = run.ended
    queue_end = run.admitted if run.admitted is not None else (end if end is not None else now)
    exec_ms = 0
    if run.started is not None:
        exec_ms = max(0, int(((end if end is not None else now) - run.started) * 1000))
    defaults = job.parameter_defaults
    params: list[JsonDict] = []
    for name, value in run.job_parameters.items():
        param: JsonDict = {"name": name, "value": value}
        if name in defaults:
            param["default"] = defaults[name]
        params.append(param)
    out: JsonDict = {
        "job_id": run.job_id,
        "run_id": run.run_id,
        "job_run_id": run.run_id,
        "number_in_job": run.run_id,
        "original_attempt_run_id": run.run_id,
        "attempt_number": 0,
        "creator_user_name": user_name,
        "run_name": run.run_name,
        "run_type": "JOB_RUN",
        "trigger": run.trigger,
        "format": "MULTI_TASK",
        "state": state,
        "status": status,
        "start_time": epoch_ms(run.created),
        "end_time": epoch_ms(end) if end is not None else 0,
        "setup_duration": 0,
        "execution_duration": 0,
        "cleanup_duration": 0,
        "run_duration": int(((end if end is not None else now) - run.created) * 1000),
        "queue_duration": max(0, int((queue_end - run.created) * 1000)),
        "run_page_url": (f"{base_url}/?o={workspace_id}#job/{run.job_id}/run/{run.run_id}"),
        "job_parameters": params,
    }
    if include_tasks and run.task_run_ids:
        out["tasks"] = [
            {
                "task_key": key,
                "run_id": task_run_id,
                "attempt_number": 0,
                "state": state,
                "status": status,
                "start_time": epoch_ms(run.started) if run.started else 0,
                "end_time": out["end_time"],
                "setup_duration": 0,
                "execution_duration": exec_ms,
                "cleanup_duration": 0,
                "run_page_url": f"{out['run_page_url']}/task/{task_run_id}",
                **_task_kind(job, key),
            }
            for key, task_run_id in zip(run.only or job.task_keys, run.task_run_ids, strict=True)
        ]
        for task in out["tasks"]:
            if "for_each_task" in task:
                _for_each_stats(task, len(run.iterations.get(task["run_id"], ())))
    return out


#: A ``RunTask`` carries its task's settings (databricks-sdk ``jobs.RunTask.notebook_task``,
#: ``python_wheel_task``, ``for_each_task``): the field says which kind of task ran.
_TASK_KINDS = ("notebook_task", "python_wheel_task", "for_each_task")


def _task_kind(job: JobRecord, key: str) -> JsonDict:
    task = job.task_settings(key)
    return {kind: copy.deepcopy(task[kind]) for kind in _TASK_KINDS if kind in task}


def _for_each_stats(task: JsonDict, iterations: int) -> None:
    """Set ``for_each_task.stats`` of a for-each ``RunTask`` ("Populated for GetRun and
    ListRuns", databricks-sdk ``jobs.RunForEachTask.stats``); the emulator's iterations all
    share their task's state ("Only latest retries are considered", ``jobs.ForEachStats``)."""
    result = task["state"].get("result_state")
    counts = {"total_iterations": iterations, "scheduled_iterations": iterations}
    if result is None:
        counts["active_iterations"] = iterations
    else:
        counts["completed_iterations"] = iterations
        counts["succeeded_iterations" if result == "SUCCESS" else "failed_iterations"] = iterations
    task["for_each_task"]["stats"] = {"task_run_stats": counts}


def state_json(run: RunRecord) -> JsonDict:
    state: JsonDict = {
        "life_cycle_state": run.life_cycle_state,
        "state_message": run.state_message,
        "user_cancelled_or_timedout": run.user_cancelled_or_timedout,
    }
    if run.result_state is not None:
        state["result_state"] = run.result_state
    if run.life_cycle_state == "QUEUED":
        state["queue_reason"] = run.state_message
    return state


def status_json(run: RunRecord) -> JsonDict:
    lcs = run.life_cycle_state
    if lcs == "QUEUED":
        return {
            "state": "QUEUED",
            "queue_details": {
                "code": "MAX_CONCURRENT_RUNS_REACHED",
                "message": run.state_message,
            },
        }
    if lcs in ("PENDING", "RUNNING", "TERMINATING"):
        return {"state": lcs}
    # TERMINATED, SKIPPED and INTERNAL_ERROR all map to the v2 TERMINATED state.
    result = "INTERNAL_ERROR" if lcs == "INTERNAL_ERROR" else (run.result_state or "SUCCESS")
    code, kind = _TERMINATION.get(result, ("SUCCESS", "SUCCESS"))
    return {
        "state": "TERMINATED",
        "termination_details": {"code": code, "type": kind, "message": run.state_message},
    }


def task_run_json(job_run: JsonDict, task_run_id: int) -> JsonDict:
    """Task run ``task_run_id`` of ``job_run`` (a ``run_json`` with its tasks) as a run:
    the job run's fields overridden by the task's; ``tasks`` holds that task only."""
    (task,) = (t for t in job_run["tasks"] if t["run_id"] == task_run_id)
    return _as_run({**job_run, "job_run_id": job_run["run_id"]}, task)


def _as_run(run: JsonDict, task: JsonDict) -> JsonDict:
    """``run`` overridden by its ``task``'s fields, ``task`` its only task."""
    task_run_id = task["run_id"]
    return {
        **run,
        **task,
        "number_in_job": task_run_id,
        "original_attempt_run_id": task_run_id,
        "tasks": [copy.deepcopy(task)],
    }


def scim_me_json(user_name: str, display_name: str) -> JsonDict:
    """``GET /api/2.0/preview/scim/v2/Me``: the caller as a SCIM ``User`` (the SDK's
    ``iam.User``). A service principal has its application id as ``userName`` and no
    email (databricks/cli ``libs/iamutil`` tells one by a UUID ``userName``)."""
    me: JsonDict = {
        "id": "1",
        "userName": user_name,
        "displayName": display_name,
        "active": True,
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
    }
    if "@" in user_name:
        me["emails"] = [{"value": user_name, "type": "work", "primary": True}]
    return me


# -- for-each iterations ---------------------------------------------------------------

#: Array properties of ``runs/get`` are paginated "when they exceed 100 elements".
ITERATIONS_PAGE = 100
_JOB_PARAMETER = re.compile(r"^\{\{\s*job\.parameters\.([A-Za-z0-9_.-]+)\s*\}\}$")


def iteration_count(loop: JsonDict, job_parameters: dict[str, str]) -> int:
    """How many iterations for-each settings ``loop`` runs with the run's parameters."""
    inputs = str(loop.get("inputs", ""))
    if (ref := _JOB_PARAMETER.match(inputs.strip())) is not None:
        inputs = job_parameters.get(ref.group(1), "")
    try:
        values = json.loads(inputs)
    except ValueError:
        return 0  # a task-value reference: its values come from code the emulator never runs
    return len(values) if isinstance(values, list) else 0


def iteration_json(task: JsonDict, iteration_run_id: int) -> JsonDict:
    """Iteration ``iteration_run_id`` of for-each ``RunTask`` ``task``: a ``RunTask`` of the
    nested task (its key and settings), with the for-each task's state and times."""
    nested = copy.deepcopy(task["for_each_task"]["task"])
    run_page_url = str(task["run_page_url"]).rsplit("/task/", 1)[0]
    common = ("attempt_number", "state", "status", "start_time", "end_time")
    return {
        **{name: copy.deepcopy(task[name]) for name in common if name in task},
        **nested,
        "run_id": iteration_run_id,
        "run_page_url": f"{run_page_url}/task/{iteration_run_id}",
    }


def for_each_run_json(
    task_run: JsonDict, iteration_ids: tuple[int, ...], page_token: str | None
) -> JsonDict:
    """``runs/get`` of a for-each task run (``task_run``: the task as a run): a page of
    its ``iterations`` and the token of the next page."""
    ids, token = page(iteration_ids, lambda i: (i,), ITERATIONS_PAGE, None, page_token, "after")
    (task,) = task_run["tasks"]
    out: JsonDict = {**task_run, "iterations": [iteration_json(task, i) for i in ids]}
    if token:
        out["next_page_token"] = token
    return out


def iteration_run_json(job_run: JsonDict, task_run_id: int, iteration_run_id: int) -> JsonDict:
    """Iteration ``iteration_run_id`` of for-each task run ``task_run_id`` of ``job_run`` (a
    ``run_json`` with its tasks) as a run, as ``runs/get-output``'s ``metadata`` shows it."""
    task_run = task_run_json(job_run, task_run_id)
    return _as_run(task_run, iteration_json(task_run["tasks"][0], iteration_run_id))
