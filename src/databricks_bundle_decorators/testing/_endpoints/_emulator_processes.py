"""Runs that execute code: the controller's wheel task as a real subprocess, and the
tasks of a job a test names executed in this process.

**Controller runs.** A run of a job whose only task is a ``python_wheel_task`` with
``entry_point: dbxdec-controller`` starts ``sys.executable -m`` :data:`CONTROLLER_MODULE`
with the run's parameters as ``--name=value``. Job parameters reach a keyword wheel task by
push-down (https://docs.databricks.com/aws/en/jobs/job-parameters, "Job parameter
pushdown"); the task's own ``named_parameters`` are added, their references rendered
(https://docs.databricks.com/aws/en/jobs/dynamic-value-references). Host and token go
into the process's environment only, as the SDK's default auth reads them
(databricks-sdk ``Config``: "environment variables"). Exit 0 ends the run ``SUCCESS``; a
non-zero exit retries the task in the same run while ``max_retries`` allows (``-1``
"means to retry indefinitely and the value ``0`` means to never retry",
databricks-sdk ``jobs.Task.max_retries``), at once (no ``min_retry_interval_millis``
means "unsuccessful runs are immediately retried"), else ends ``FAILED``; the job's
``timeout_seconds`` is not enforced here. ``runs/cancel`` ends the run ``CANCELED``, no
retry; the process gets SIGTERM, then SIGKILL after :data:`KILL_GRACE` seconds.
:attr:`ProcessRuns.hold_starts` keeps a due process waiting (its run shown RUNNING; on
Databricks a run whose cluster is being prepared is ``PENDING``, databricks-sdk
``jobs.RunLifeCycleState``, so no code may rely on RUNNING meaning the task started).

**Executed tasks** (:meth:`TaskRuns.execute`): each admitted run of the job stays RUNNING
while one worker thread executes its tasks in ``depends_on`` order (Jobs API
``Task.depends_on``) with their parameters pushed down and rendered as above
(``{{task.run_id}}`` is the task run's id). A ``notebook_task`` runs the generated
notebook with a ``dbutils`` stand-in: widgets are those parameters ("Retrieve these
parameters in a notebook using dbutils.widgets.get", ``jobs.NotebookTask.base_parameters``),
``jobs.taskValues`` the run's task values, and the value given to ``notebook.exit()``
becomes ``notebook_output.result`` (``jobs.NotebookOutput.result``; a notebook that raises
leaves none: "absent if dbutils.notebook.exit() was never called"). A
``python_wheel_task`` with entry point ``dbxdec-run`` runs the runtime's entry; its stdout
becomes the task run's ``logs`` (``jobs.RunOutput.logs``). A failed task ends the run
``FAILED`` and its dependants do not run ("All tasks specified in this field must
complete successfully before executing this task", ``jobs.Task.depends_on``). Task
retries and for-each tasks are not executed (such a run ends ``FAILED``, saying so).
Tasks run one at a time: ``contextlib.redirect_stdout`` is process-wide, so what other
threads print meanwhile lands in that task's output.
"""

from __future__ import annotations

import contextlib
import graphlib
import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from .._store._emulator_records import JobRecord, RunRecord
from .._store._emulator_refs import render_references
from .._store._emulator_state import JobsModel

CONTROLLER_ENTRY_POINT = "dbxdec-controller"
CONTROLLER_MODULE = "databricks_bundle_decorators.launch.control.entry"
UNTIL_EXIT = 1e300  # a process run's planned end: not a held run's inf, so release() skips it
KILL_GRACE = 3.0  # seconds between SIGTERM and SIGKILL of a cancelled run's process


@dataclass
class ProcessAttempt:
    """One execution of a run's wheel task."""

    run_id: int
    number: int  # 1-based
    argv: list[str]
    process: subprocess.Popen[bytes]
    stdout: bytes = b""
    stderr: bytes = b""
    returncode: int | None = None


@dataclass
class _RunProcesses:
    max_retries: int
    attempts: list[ProcessAttempt] = field(default_factory=list)
    cancelled: bool = False


class ProcessRuns:
    """The subprocesses of the controller's runs; ``changed`` is the emulator's condition
    on its lock, ``module`` what ``python -m`` runs (tests may run a smaller one)."""

    def __init__(
        self, model: JobsModel, changed: threading.Condition, token: Callable[[], str | None]
    ) -> None:
        self.model = model
        self.changed = changed
        self.token = token
        self.module = CONTROLLER_MODULE
        self.extra_env: dict[str, str] = {}  # more environment for every process
        self.hold_starts = False  # a process due to start waits until release_starts()
        self._held: list[tuple[RunRecord, Mapping[str, Any]]] = []
        self._runs: dict[int, _RunProcesses] = {}
        self._stopped = False

    def admitted(self, job: JobRecord, run: RunRecord) -> bool:
        """Start the process of ``run`` if its job is the controller's; whether it is."""
        tasks = job.settings.get("tasks") or []
        wheel = tasks[0].get("python_wheel_task") if len(tasks) == 1 else None
        if not isinstance(wheel, dict) or wheel.get("entry_point") != CONTROLLER_ENTRY_POINT:
            return False
        task = tasks[0]
        retries = int(task.get("max_retries", 0) or 0)
        self._runs[run.run_id] = _RunProcesses(retries)
        run.planned_end = UNTIL_EXIT  # ends when its process does
        self._start(run, wheel)
        return True

    def cancelled(self, run_id: int) -> None:
        """``runs/cancel`` of a code-running run: no retry; SIGTERM, then SIGKILL."""
        entry = self._runs.get(run_id)
        if entry is None:
            return
        entry.cancelled = True
        attempt = entry.attempts[-1] if entry.attempts else None
        if attempt is not None and attempt.returncode is None:
            _terminate(attempt.process)

    def outputs(self, run_id: int | None = None) -> list[ProcessAttempt]:
        """Every attempt (of one run), in start order; finished ones carry their output."""
        with self.changed:
            found = [a for r, e in self._runs.items() if run_id in (None, r) for a in e.attempts]
        return sorted(found, key=lambda a: (a.run_id, a.number))

    def held_starts(self) -> int:
        """How many processes wait for :meth:`release_starts` now."""
        with self.changed:
            return len(self._held)

    def wait_for_held_starts(self, count: int, *, timeout: float = 60.0) -> None:
        """Block until ``count`` processes wait to start (raises ``TimeoutError``)."""
        with self.changed:
            if not self.changed.wait_for(lambda: len(self._held) >= count, timeout=timeout):
                raise TimeoutError(f"{count} held process starts not reached in {timeout:g} s")

    def release_starts(self) -> None:
        """Stop holding starts and start the processes held (of runs still active)."""
        with self.changed:
            self.hold_starts = False
            held, self._held = self._held, []
            for run, wheel in held:
                if run.active and not self._runs[run.run_id].cancelled:
                    self._start(run, wheel)
            self.changed.notify_all()

    def stop(self) -> None:
        """Kill every process still alive (the emulator is stopping)."""
        with self.changed:
            self._stopped = True
            alive = [a.process for e in self._runs.values() for a in e.attempts]
        for process in alive:
            if process.poll() is None:
                process.kill()
        for process in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=KILL_GRACE)

    def _start(self, run: RunRecord, wheel: Mapping[str, Any]) -> None:
        if self.hold_starts:  # the caller holds the lock
            self._held.append((run, wheel))
            self.changed.notify_all()
            return
        entry = self._runs[run.run_id]
        params = dict(run.job_parameters)
        references = self.model.references(run)
        for name, value in (wheel.get("named_parameters") or {}).items():
            params[str(name)] = render_references(str(value), references)
        argv = [sys.executable, "-m", self.module, *(f"--{k}={v}" for k, v in params.items())]
        env = {
            **os.environ,
            **self.extra_env,
            "DATABRICKS_HOST": self.model.base_url,
            "DATABRICKS_TOKEN": self.token() or "dapi-test",
        }
        for name in ("DATABRICKS_CONFIG_PROFILE", "DATABRICKS_CLIENT_ID", "DATABRICKS_AUTH_TYPE"):
            env.pop(name, None)  # the environment variables are the run's only credentials
        process = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        attempt = ProcessAttempt(run.run_id, len(entry.attempts) + 1, argv, process)
        entry.attempts.append(attempt)
        threading.Thread(
            target=self._wait, args=(run, attempt, wheel), name=f"emu-run-{run.run_id}", daemon=True
        ).start()

    def wait_for_output(self, text: str, *, count: int = 1, timeout: float = 60.0) -> None:
        """Block until ``text`` occurs ``count`` times in the processes' stdout, as it is
        printed (raises ``TimeoutError``)."""

        def said() -> int:
            stdouts = (a.stdout for e in self._runs.values() for a in e.attempts)
            return sum(out.decode(errors="replace").count(text) for out in stdouts)

        with self.changed:
            if not self.changed.wait_for(lambda: said() >= count, timeout=timeout):
                raise TimeoutError(f"controller output {text!r} x{count} not seen in {timeout:g} s")

    def _wait(self, run: RunRecord, attempt: ProcessAttempt, wheel: Mapping[str, Any]) -> None:
        # stdout line by line as printed (tests sync on it), stderr whole by a second thread
        errors: list[bytes] = []
        process = attempt.process
        assert process.stdout is not None and process.stderr is not None
        reader = threading.Thread(target=lambda: errors.append(process.stderr.read()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        for line in process.stdout:
            with self.changed:
                attempt.stdout += line
                self.changed.notify_all()
        process.wait()
        reader.join()
        with self.changed:
            attempt.stderr = b"".join(errors)
            attempt.returncode = attempt.process.returncode
            entry = self._runs[run.run_id]
            now = time.monotonic()
            self.model.advance(now)
            if entry.cancelled or not run.active or self._stopped:
                self.changed.notify_all()
                return
            if attempt.returncode == 0:
                self._end(run, now, "SUCCESS", "")
            elif entry.max_retries == -1 or attempt.number <= entry.max_retries:
                self._start(run, wheel)  # the same job run, the task's next attempt
            else:
                message = f"Task failed: exit code {attempt.returncode}"
                self._end(run, now, "FAILED", message)
            self.changed.notify_all()

    def _end(self, run: RunRecord, now: float, result: str, message: str) -> None:
        run.planned_end, run.planned_result, run.planned_message = now, result, message
        self.model.advance(now)  # the model ends it and gives its slot to a queued run


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except OSError:
        return

    def kill_later() -> None:
        try:
            process.wait(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)

    threading.Thread(target=kill_later, name="emu-kill", daemon=True).start()


class ProcessJobsModel(JobsModel):
    """The jobs model whose controller and executed runs run code."""

    def __init__(
        self,
        changed: threading.Condition,
        token: Callable[[], str | None],
        workspace_id: str,
        user_name: str,
    ) -> None:
        super().__init__(workspace_id=workspace_id, user_name=user_name)
        self.processes = ProcessRuns(self, changed, token)
        self.tasks = TaskRuns(self, changed)  # runs whose tasks a test has executed

    def _admit(self, job: JobRecord, run: RunRecord, at: float) -> None:
        super()._admit(job, run, at)
        if not self.processes.admitted(job, run):
            self.tasks.admitted(job, run)

    def _cancel(self, run: RunRecord, now: float) -> None:
        active = run.active
        super()._cancel(run, now)
        if active:
            self.processes.cancelled(run.run_id)


def processes_of(emulator: Any) -> ProcessRuns:
    """The code-running runs of a :class:`~..emulator.JobsEmulator` (for tests)."""
    model = emulator._model
    assert isinstance(model, ProcessJobsModel)
    return model.processes


# -- tasks executed in this process -----------------------------------------------------

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
    """The executed runs of the jobs a test named (see the module docstring)."""

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
        """End the worker after the task running now; queued runs are not executed."""
        self._stopped = True
        self._due.put(None)

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
        references = self.model.references(run)
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
        self.jobs = SimpleNamespace(taskValues=_TaskValues(values, task_key))
        self.notebook = _Notebook()
        self.library = SimpleNamespace(restartPython=lambda: None)


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


class _Notebook:
    def __init__(self) -> None:
        self.value: str | None = None

    def exit(self, value: str) -> None:
        self.value = str(value)
        raise _NotebookExit
