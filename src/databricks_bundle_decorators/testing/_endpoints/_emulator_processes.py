"""Runs that execute code: the controller job's wheel task as a real subprocess.

The emulator runs no user code, with one exception the controller needs (issue 28): a
run of a job whose only task is a ``python_wheel_task`` with ``entry_point:
dbxdec-controller`` starts ``sys.executable -m
databricks_bundle_decorators.launch.control.entry`` with the run's parameters as
``--name=value``. Job parameters reach a keyword wheel task by push-down
(https://docs.databricks.com/aws/en/jobs/job-parameters, "Job parameter pushdown"); the
task's own ``named_parameters`` are added, their references rendered
(:func:`.._store._emulator_refs.render_references`,
https://docs.databricks.com/aws/en/jobs/dynamic-value-references). The workspace URL
and the token go into the process's **environment** only (``DATABRICKS_HOST``,
``DATABRICKS_TOKEN``), never into a parameter, as the SDK's default auth reads them
(databricks-sdk ``Config``: "environment variables").

The run's state follows the process:

- exit 0 -> the run ends ``SUCCESS``;
- a non-zero exit -> the task is retried, in the same job run, while its
  ``max_retries`` allows: ``-1`` "means to retry indefinitely and the value ``0`` means
  to never retry" (databricks-sdk ``jobs.Task.max_retries``); a retry starts at once,
  as no ``min_retry_interval_millis`` means "unsuccessful runs are immediately retried"
  (``jobs.Task.min_retry_interval_millis``). When no retry is left the run ends
  ``FAILED``. (The job's ``timeout_seconds`` is not enforced on these runs: the tests
  never reach it, and ``retry_on_timeout``, "whether to retry a job when it times out",
  would only matter then.)
- ``runs/cancel`` -> the run ends ``CANCELED`` at once and is never retried; the process
  gets SIGTERM, then SIGKILL after :data:`KILL_GRACE` seconds.

:attr:`ProcessRuns.hold_starts` makes a process due to start wait until
:meth:`ProcessRuns.release_starts` (a test-only hold, its run shown RUNNING; on Databricks
a run whose cluster and execution context are being prepared is ``PENDING``,
databricks-sdk ``jobs.RunLifeCycleState``, so no code may rely on RUNNING meaning the
task has started): tests use it to look at the workspace before any controller code has
run. :meth:`ProcessRuns.stop` (called by the
emulator's ``stop()``) kills every process still
alive. Each attempt's stdout and stderr are kept (:meth:`ProcessRuns.outputs`) for tests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._store._emulator_records import JobRecord, RunRecord
from .._store._emulator_refs import render_references, run_references
from .._store._emulator_state import JobsModel
from ._emulator_tasks import TaskRuns

CONTROLLER_ENTRY_POINT = "dbxdec-controller"
CONTROLLER_MODULE = "databricks_bundle_decorators.launch.control.entry"
UNTIL_EXIT = 1e300
"""The planned end of a process run: far, but not the ``inf`` of a held run, so that
``release()`` of held runs leaves it alone (only its process ends it)."""
KILL_GRACE = 3.0
"""Seconds between SIGTERM and SIGKILL of a cancelled run's process."""


@dataclass
class ProcessAttempt:
    """One execution of a run's wheel task: its process, arguments and output."""

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


def wheel_entry(settings: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``python_wheel_task`` of a job whose only task is one, else ``None``."""
    tasks = settings.get("tasks") or []
    if len(tasks) != 1 or not isinstance(tasks[0].get("python_wheel_task"), dict):
        return None
    wheel: Mapping[str, Any] = tasks[0]["python_wheel_task"]
    return wheel


class ProcessRuns:
    """The subprocesses of the emulator's code-running runs.

    Args:
        model: The jobs model (its runs are finished here, under ``changed``'s lock).
        changed: The emulator's condition on its lock, notified when a run ends.
        token: The token to hand to the processes (``None``: ``dapi-test``).
        module: The module run with ``python -m`` (tests may run a smaller one).
    """

    def __init__(
        self,
        model: JobsModel,
        changed: threading.Condition,
        token: Callable[[], str | None],
        module: str = CONTROLLER_MODULE,
    ) -> None:
        self.model = model
        self.changed = changed
        self.token = token
        self.module = module
        self.extra_env: dict[str, str] = {}
        """More environment for every process (tests: short timeouts, a fault point)."""
        self.hold_starts = False
        """While true, a process due to start (a run admitted, a task retried) waits until
        :meth:`release_starts` (a test-only hold: see the module docstring): a test then
        sees what happened before any controller code ran."""
        self._held: list[tuple[RunRecord, Mapping[str, Any]]] = []
        self._runs: dict[int, _RunProcesses] = {}
        self._stopped = False

    # -- called by the model, with the emulator's lock held ---------------------------

    def admitted(self, job: JobRecord, run: RunRecord) -> bool:
        """Start the process of ``run`` if its job is the controller's; whether it is."""
        wheel = wheel_entry(job.settings)
        if wheel is None or wheel.get("entry_point") != CONTROLLER_ENTRY_POINT:
            return False
        task = job.settings["tasks"][0]
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

    # -- test-side -----------------------------------------------------------------

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
        """Block until ``count`` processes wait to start (see :attr:`hold_starts`).

        Raises:
            TimeoutError: not reached in ``timeout`` seconds.
        """
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

    # -- inside --------------------------------------------------------------------

    def _start(self, run: RunRecord, wheel: Mapping[str, Any]) -> None:
        if self.hold_starts:  # the caller holds the lock
            self._held.append((run, wheel))
            self.changed.notify_all()
            return
        entry = self._runs[run.run_id]
        params = dict(run.job_parameters)
        references = run_references(
            job_id=run.job_id,
            run_id=run.run_id,
            trigger_ms=self.model.epoch_ms(run.created),
            parameters=run.job_parameters,
        )
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
        """Block until ``text`` occurs ``count`` times in the processes' stdout (every
        attempt's, as it is printed): a test syncs on what the controller says it did.

        Raises:
            TimeoutError: not seen in ``timeout`` seconds (what was awaited is named).
        """
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                said = sum(
                    a.stdout.decode(errors="replace").count(text)
                    for e in self._runs.values()
                    for a in e.attempts
                )
                if said >= count:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"controller output {text!r} x{count} not seen in {timeout:g} s"
                    )
                self.changed.wait(left)

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
    """The jobs model whose controller-job runs run a real process (:class:`ProcessRuns`)."""

    def __init__(
        self,
        changed: threading.Condition,
        token: Callable[[], str | None],
        workspace_id: str,
        user_name: str,
    ) -> None:
        super().__init__(base_url="", workspace_id=workspace_id, user_name=user_name)
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


def stop_processes(model: JobsModel) -> None:
    """Kill the processes of ``model``'s runs, if it runs any; end its task worker."""
    if isinstance(model, ProcessJobsModel):
        model.processes.stop()
        model.tasks.stop()
