"""For-each task runs of the emulated Jobs service: their iterations in ``runs/get``.

A for-each task runs its nested task once per element of ``inputs`` ("Array for task to
iterate on. This can be a JSON string or a reference to an array parameter",
databricks-sdk ``jobs.ForEachTask.inputs``). Each iteration is a task run of its own:

* ``runs/get`` on the job run lists the for-each task in ``tasks``, with ``for_each_task``
  (its settings and ``stats``, "Populated for GetRun and ListRuns", ``jobs.RunForEachTask``);
* ``runs/get`` on the for-each task's run id answers that one task in ``tasks`` and its
  iterations in ``iterations`` ("Only populated by for-each iterations. The parent for-each
  task is located in tasks array", ``jobs.Run.iterations``), 100 a page with
  ``next_page_token`` ("Large arrays in the results will be paginated when they exceed 100
  elements", ``JobsAPI.get_run``; the SDK's ``JobsExt.get_run`` pages "iterations" for a
  "ForEach task run" and repeats its one task on every page);
* an iteration is a ``RunTask`` of the nested task (its ``task_key`` and settings), so its
  ``runs/get-output`` answers by the nested task's type (see ``_emulator_output``).

The emulator runs no code: the iterations are counted from a JSON array in ``inputs`` or
from a ``{{job.parameters.<name>}}`` reference to one; a task-value reference counts none.
"""

from __future__ import annotations

import copy
import json
import re

from ._emulator_records import JsonDict, _decode_token, _encode_token
from ._emulator_render import task_run_json

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
    """``runs/get`` of a for-each task run (``task_run``: the task as a run, with its one
    task): a page of its ``iterations`` and the token of the next page."""
    start = 0
    if page_token:
        after = _decode_token(page_token)
        start = next(
            (i for i, run_id in enumerate(iteration_ids) if run_id > after), len(iteration_ids)
        )
    (task,) = task_run["tasks"]
    page = iteration_ids[start : start + ITERATIONS_PAGE]
    out: JsonDict = {**task_run, "iterations": [iteration_json(task, i) for i in page]}
    if start + ITERATIONS_PAGE < len(iteration_ids):
        out["next_page_token"] = _encode_token(page[-1])
    return out


def iteration_run_json(job_run: JsonDict, task_run_id: int, iteration_run_id: int) -> JsonDict:
    """Iteration ``iteration_run_id`` of for-each task run ``task_run_id`` of ``job_run`` (a
    ``run_json`` with its tasks) as a run, as ``runs/get-output``'s ``metadata`` shows it."""
    task_run = task_run_json(job_run, task_run_id)
    iteration = iteration_json(task_run["tasks"][0], iteration_run_id)
    return {
        **task_run,
        **iteration,
        "number_in_job": iteration_run_id,
        "original_attempt_run_id": iteration_run_id,
        "tasks": [copy.deepcopy(iteration)],
    }
