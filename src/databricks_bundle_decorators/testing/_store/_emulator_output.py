"""``GET jobs/runs/get-output`` of the emulated Jobs service: one task run's output.

The real service answers get-output for a *task* run only: the id of a job run whose job
has tasks is refused with 400 ``INVALID_PARAMETER_VALUE`` (clients read each task run's
output, found in ``runs/get``'s ``tasks``), and an unknown id gets the same answer as
``runs/get`` ("Run N does not exist.", which the SDK raises as ``ResourceDoesNotExist``).
The answer is ``{"metadata": <the task run>, "logs", "logs_truncated", "error"}``:

* ``metadata`` is the task run as a ``Run``: the job run's fields, with the task's
  ``run_id``, state and times, ``tasks`` holding only that task, and ``job_run_id``
  naming the job run it belongs to;
* ``logs`` (a wheel or Python task's stdout) only for a task run that is not a notebook
  task's ("It's not supported for the notebook_task", databricks-sdk ``jobs.RunOutput.logs``),
  and only when a test set them with
  ``JobsEmulator.set_task_logs``, cut to their last :data:`MAX_OUTPUT_BYTES` with
  ``logs_truncated`` true ("Databricks restricts this API to return the last 5 MB of these
  logs", databricks-sdk ``jobs.RunOutput.logs``); ``logs_truncated`` is always present;
* ``notebook_output`` ``{result, truncated}`` for a notebook task run: the value a test set
  with ``JobsEmulator.set_notebook_result`` (the task's ``dbutils.notebook.exit()``), cut to
  its *first* :data:`MAX_OUTPUT_BYTES` ("Databricks restricts this API to return the first
  5 MB of the value", databricks-sdk ``jobs.NotebookOutput.result``); ``result`` is absent
  when none was set ("absent if dbutils.notebook.exit() was never called");
* ``error``: the state message of a task run that ended without success.

A run of a job without tasks (which only the emulator allows) is its own task run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._emulator_clock import EmulatorClock
from ._emulator_for_each import iteration_run_json
from ._emulator_records import JsonDict, RunRecord, invalid
from ._emulator_render import task_run_json

#: Databricks returns the last 5 MB of a task run's logs (``RunOutput.logs``).
MAX_OUTPUT_BYTES = 5 * 1024 * 1024
MULTI_TASK_REFUSAL = (
    "Retrieving the output of runs with multiple tasks is not supported. "
    "Please retrieve the output of each individual task run instead."
)
_UNSUCCESSFUL = frozenset({"FAILED", "TIMEDOUT", "CANCELED", "INTERNAL_ERROR"})


class RunOutputs:
    """Mixed into :class:`~._emulator_state.JobsModel`; call with the lock held."""

    _runs: dict[int, RunRecord]
    _task_logs: dict[int, str]
    _notebook_results: dict[int, str]
    clock: EmulatorClock

    if TYPE_CHECKING:

        def advance(self, now: float) -> None: ...

        def _run_json(self, run: RunRecord, now: float, *, include_tasks: bool) -> JsonDict: ...

    def set_task_logs(self, task_run_id: int, text: str) -> None:
        """Keep ``text`` as the task run's ``logs`` (replacing earlier ones).

        Raises:
            KeyError: no run has this id.
            ValueError: the id is a job run's (whose job has tasks), not a task run's.
        """
        run = self._run_of_task(task_run_id)
        if run is None:
            raise KeyError(f"Run {task_run_id} does not exist.")
        if task_run_id == run.run_id and run.task_run_ids:
            raise ValueError(f"run {task_run_id} is a job run: {MULTI_TASK_REFUSAL}")
        self._task_logs[task_run_id] = text

    def set_notebook_result(self, task_run_id: int, text: str) -> None:
        """Keep ``text`` as the value the notebook task run gave ``dbutils.notebook.exit()``.

        Raises:
            KeyError: no run has this id.
            ValueError: the id is a job run's (whose job has tasks), not a task run's.
        """
        self.set_task_logs(task_run_id, "")  # the same checks of the id
        del self._task_logs[task_run_id]
        self._notebook_results[task_run_id] = text

    def get_run_output(self, run_id: int, now: float) -> JsonDict:
        """The ``runs/get-output`` answer for task run ``run_id`` (see the module doc)."""
        self.advance(now)
        run = self._run_of_task(run_id)
        if run is None or self.clock.removed(run, now):  # removed after 60 days: _emulator_clock
            raise invalid(f"Run {run_id} does not exist.")
        if run_id == run.run_id and run.task_run_ids:
            raise invalid(MULTI_TASK_REFUSAL)
        job_run = self._run_json(run, now, include_tasks=True)
        parent = next((t for t, ids in run.iterations.items() if run_id in ids), None)
        if parent is not None:  # an iteration of a for-each task: _emulator_for_each
            metadata = iteration_run_json(job_run, parent, run_id)
        else:
            metadata = job_run if run_id == run.run_id else task_run_json(job_run, run_id)
        out: JsonDict = {"metadata": metadata, "logs_truncated": False}
        if any("notebook_task" in task for task in metadata.get("tasks", [])):
            notebook: JsonDict = {"truncated": False}
            if run_id in self._notebook_results:
                raw = self._notebook_results[run_id].encode()
                notebook["result"] = raw[:MAX_OUTPUT_BYTES].decode(errors="ignore")
                notebook["truncated"] = len(raw) > MAX_OUTPUT_BYTES
            out["notebook_output"] = notebook
        elif run_id in self._task_logs:
            raw = self._task_logs[run_id].encode()
            out["logs"] = raw[-MAX_OUTPUT_BYTES:].decode(errors="ignore")
            out["logs_truncated"] = len(raw) > MAX_OUTPUT_BYTES
        if run.result_state in _UNSUCCESSFUL and run.state_message:
            out["error"] = run.state_message
        return out

    def _run_of_task(self, run_id: int) -> RunRecord | None:
        """The job run that task run ``run_id`` belongs to (or that has this id)."""
        if run_id in self._runs:
            return self._runs[run_id]
        return next(
            (
                r
                for r in self._runs.values()
                if run_id in r.task_run_ids or any(run_id in i for i in r.iterations.values())
            ),
            None,
        )
