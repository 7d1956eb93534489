"""Runs that execute their job's tasks in this process, as Databricks would (a test hook).

For a job a test names (:meth:`TaskRuns.execute`), each admitted run stays RUNNING
while one worker thread executes its tasks in ``depends_on`` order (Jobs API
``Task.depends_on``), in the test's process (its SparkSession, its warehouse), then ends
the run. Each task gets its parameters as Databricks hands them over: the run's job
parameters pushed down ("Job parameter pushdown",
https://docs.databricks.com/aws/en/jobs/job-parameters) beside the task's own, every
dynamic value reference rendered by the emulator's one renderer
(:func:`.._store._emulator_refs.render_references`; ``{{task.run_id}}`` is the task run's
id, https://docs.databricks.com/aws/en/jobs/dynamic-value-references).

- A ``notebook_task`` runs the notebook the generator writes for it
  (:func:`...bundle.notebook_task.job_notebooks`) with a ``dbutils`` stand-in: its
  widgets are those parameters ("Retrieve these parameters in a notebook using
  dbutils.widgets.get", ``jobs.NotebookTask.base_parameters``), its
  ``jobs.taskValues`` are the run's task values (so a later task reads an earlier one's),
  and the value given to ``notebook.exit()`` becomes the task run's
  ``notebook_output.result`` (``jobs.NotebookOutput.result``). A notebook that raises
  fails its task and leaves no result ("absent if dbutils.notebook.exit() was never
  called").
- A ``python_wheel_task`` whose entry point is ``dbxdec-run`` runs
  :func:`...runtime.entrypoint.main` with ``--name=value`` arguments; its stdout becomes
  the task run's ``logs`` (``jobs.RunOutput.logs``); a non-zero exit fails the task.

A failed task ends the run ``FAILED`` and the tasks depending on it do not run ("All
tasks specified in this field must complete successfully before executing this task",
``jobs.Task.depends_on``). The
emulator shows every task run in the job run's state. Task retries and for-each tasks
are not executed (such a run ends ``FAILED``, saying so).
What each task did is kept for tests (:meth:`TaskRuns.executed`). Tasks run one at a
time: a task's stdout is taken with ``contextlib.redirect_stdout``, which is process-wide,
so what other threads print meanwhile (a CLI's progress lines) lands in that task's output.
"""

from __future__ import annotations

import contextlib
import graphlib
import io
import json
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._store._emulator_records import JobRecord, RunRecord
from .._store._emulator_refs import render_references, run_references
from .._store._emulator_state import JobsModel

DBXDEC_RUN = "dbxdec-run"


@dataclass(frozen=True)
class ExecutedTask:
    """One task run the emulator executed: what it printed, and why it failed (or "")."""

    run_id: int
    task_key: str
    task_run_id: int
    kind: str  # notebook_task | python_wheel_task
    stdout: str
    error: str
    seconds: float


class TaskRuns:
    """The executed runs of the jobs a test named (see the module docstring).

    Args:
        model: The jobs model (runs are ended here, under ``changed``'s lock).
        changed: The emulator's condition on its lock.
    """

    def __init__(self, model: JobsModel, changed: threading.Condition) -> None:
        self.model = model
        self.changed = changed
        self._jobs: set[int] = set()
        self._due: queue.SimpleQueue[tuple[RunRecord, dict[str, Any]] | None] = queue.SimpleQueue()
        self._done: list[ExecutedTask] = []
        self._worker: threading.Thread | None = None
        self._stopped = False

    def execute(self, job_id: int) -> None:
        """Execute the tasks of job ``job_id``'s runs admitted from now on."""
        with self.changed:
            self._jobs.add(job_id)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="emu-tasks", daemon=True)
                self._worker.start()

    def executed(self) -> list[ExecutedTask]:
        """Every task run executed so far, in order."""
        with self.changed:
            return list(self._done)

    def admitted(self, job: JobRecord, run: RunRecord) -> bool:
        """Queue ``run`` for execution if its job is executed; whether it is (lock held)."""
        if job.job_id not in self._jobs:
            return False
        run.planned_end = float("inf")  # ends when its tasks have run
        self._due.put((run, json.loads(json.dumps(job.settings))))
        return True

    def stop(self) -> None:
        """End the worker after the task running now; queued runs are not executed (the
        emulator is stopping)."""
        self._stopped = True
        self._due.put(None)

    # -- the worker ------------------------------------------------------------------

    def _work(self) -> None:
        while (item := self._due.get()) is not None and not self._stopped:
            run, settings = item
            try:
                failed = self._run(run, settings)
                message = f"Task {failed} failed" if failed else ""
            except Exception as exc:  # a task the emulator cannot execute (a for-each task)
                message = f"the emulator could not execute run {run.run_id}: {exc!r}"
            with self.changed:
                now = time.monotonic()
                if run.active:  # not cancelled meanwhile
                    run.planned_end = now
                    run.planned_result = "FAILED" if message else "SUCCESS"
                    run.planned_message = message
                    self.model.advance(now)
                self.changed.notify_all()

    def _run(self, run: RunRecord, settings: dict[str, Any]) -> str:
        """Execute ``run``'s tasks; the key of the task that failed, or ""."""
        from ...bundle.notebook_task import job_notebooks

        tasks = {t["task_key"]: t for t in settings.get("tasks", [])}
        keys = list(run.only or tasks)
        task_run_ids = dict(zip(keys, run.task_run_ids, strict=True))
        order = graphlib.TopologicalSorter(
            {
                k: [d["task_key"] for d in tasks[k].get("depends_on", []) if d["task_key"] in keys]
                for k in keys
            }
        ).static_order()
        notebooks = job_notebooks(settings, notebook_dir=".", wheels=(), serverless=False)
        references = run_references(
            job_id=run.job_id,
            run_id=run.run_id,
            trigger_ms=self.model.epoch_ms(run.created),
            parameters=run.job_parameters,
        )
        pushed = {k: render_references(v, references) for k, v in run.job_parameters.items()}
        values: dict[str, dict[str, Any]] = {}
        for key in order:
            if self._stopped:
                return ""
            task, task_run_id, began = tasks[key], task_run_ids[key], time.monotonic()
            own = {**references, "task.run_id": str(task_run_id), "task.name": key}
            if "notebook_task" in task:
                notebook = task["notebook_task"]
                widgets = {**pushed, **notebook.get("base_parameters", {})}
                widgets = {k: render_references(str(v), own) for k, v in widgets.items()}
                source = notebooks[notebook["notebook_path"].rsplit("/", 1)[-1]]
                done = _run_notebook(source, NotebookDbutils(widgets, values, key))
                kind = "notebook_task"
            else:
                wheel = task["python_wheel_task"]
                named = {**pushed, **wheel.get("named_parameters", {})}
                argv = [f"--{k}={render_references(str(v), own)}" for k, v in named.items()]
                done = _run_wheel(wheel.get("entry_point", ""), argv)
                kind = "python_wheel_task"
            stdout, error, result = done
            with self.changed:
                self._done.append(
                    ExecutedTask(
                        run.run_id, key, task_run_id, kind, stdout, error, time.monotonic() - began
                    )
                )
                if kind == "python_wheel_task":
                    self.model.set_task_logs(task_run_id, stdout)
                elif result is not None:
                    self.model.set_notebook_result(task_run_id, result)
            if error:
                return str(key)
        return ""


def _run_notebook(source: str, dbutils: NotebookDbutils) -> tuple[str, str, str | None]:
    """Execute a notebook's source: (its stdout, its error or "", its exit value)."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, "<notebook>", "exec"), {"dbutils": dbutils})
    except _NotebookExit:
        pass
    except BaseException as exc:
        return out.getvalue(), f"{type(exc).__name__}: {exc}", None
    return out.getvalue(), "", dbutils.notebook.value


def _run_wheel(entry_point: str, argv: list[str]) -> tuple[str, str, None]:
    """Run ``dbxdec-run`` with ``argv``: (its stdout, its error or "", None)."""
    from ...runtime import entrypoint

    if entry_point != DBXDEC_RUN:
        return "", f"the emulator executes no entry point {entry_point!r}", None
    out = io.StringIO()
    code: int | str | None = 0
    try:
        with contextlib.redirect_stdout(out):
            entrypoint.main(argv)
    except SystemExit as exited:
        code = exited.code
    except Exception as exc:
        return out.getvalue(), f"{type(exc).__name__}: {exc}", None
    return out.getvalue(), "" if code in (0, None) else f"exit code {code}", None


class _NotebookExit(BaseException):
    """``dbutils.notebook.exit()``: the notebook stops there."""


class NotebookDbutils:
    """The ``dbutils`` of an executed notebook: widgets, ``jobs.taskValues``,
    ``notebook.exit`` and ``library.restartPython`` (a no-op: nothing was installed)."""

    def __init__(
        self, widgets: Mapping[str, str], values: dict[str, dict[str, Any]], task_key: str
    ) -> None:
        self.widgets = _Widgets(widgets)
        self.jobs = _Jobs(_TaskValues(values, task_key))
        self.notebook = _Notebook()
        self.library = _Library()


@dataclass
class _Widgets:
    values: Mapping[str, str]

    def get(self, name: str) -> str:
        if name not in self.values:  # as the notebook's InputWidgetNotDefined
            raise ValueError(f"No input widget named {name} is defined")
        return self.values[name]


@dataclass
class _TaskValues:
    """``dbutils.jobs.taskValues`` of one task of a run ("Use task values to pass
    information between tasks", https://docs.databricks.com/aws/en/jobs/task-values)."""

    values: dict[str, dict[str, Any]]
    task_key: str

    def set(self, key: str, value: Any) -> None:
        self.values.setdefault(self.task_key, {})[key] = json.loads(json.dumps(value))

    def get(self, taskKey: str, key: str, default: Any = None, debugValue: Any = None) -> Any:
        found = self.values.get(taskKey, {})
        if key in found:
            return found[key]
        if default is not None:
            return default
        raise ValueError(f"Task value {key!r} of task {taskKey!r} was not found")


@dataclass
class _Jobs:
    taskValues: _TaskValues


class _Notebook:
    def __init__(self) -> None:
        self.value: str | None = None

    def exit(self, value: str) -> None:
        self.value = str(value)
        raise _NotebookExit


class _Library:
    def restartPython(self) -> None:
        return None
