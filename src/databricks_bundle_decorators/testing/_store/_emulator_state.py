"""In-memory model of the Jobs service behind :class:`JobsEmulator` (no HTTP; the caller
holds the lock). Every method first *advances* the model to "now", replaying slot releases
in time order, so a queued run starts exactly when a slot freed; no thread per run.

``runs/get-output`` answers for a *task* run only: a job run whose job has tasks is
refused with 400 ``INVALID_PARAMETER_VALUE``, an unknown id gets ``runs/get``'s answer.
``metadata`` is the task run as a ``Run``; ``logs`` (set by ``set_task_logs``) only for a
task that is not a notebook task ("It's not supported for the notebook_task",
databricks-sdk ``jobs.RunOutput.logs``), cut to their last :data:`MAX_OUTPUT_BYTES`
("Databricks restricts this API to return the last 5 MB of these logs", the same);
``notebook_output`` ``{result, truncated}`` for a notebook task, cut to its *first*
:data:`MAX_OUTPUT_BYTES` ("Databricks restricts this API to return the first 5 MB of the
value", ``jobs.NotebookOutput.result``), ``result`` absent when none was set ("absent if
dbutils.notebook.exit() was never called"); ``error``: the state message of a task run
that ended without success. A run of a job without tasks is its own task run.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from typing import Any

from ._emulator_records import (
    MAX_IDEMPOTENCY_TOKEN_LENGTH,
    MAX_JOBS_LIST_LIMIT,
    MAX_QUEUE_SIZE,
    MAX_RUNS_LIST_LIMIT,
    OUTCOME_RESULTS,
    ApiError,
    EmulatorClock,
    JobRecord,
    JsonDict,
    Outcome,
    RunRecord,
    _JobQueue,
    check_limit,
    copied_body,
    invalid,
    list_order,
    only_tasks,
    opt_bool,
    opt_int,
    page,
    require_int,
    run_now_options,
)
from ._emulator_refs import run_references
from ._emulator_render import (
    for_each_run_json,
    iteration_count,
    iteration_run_json,
    job_json,
    run_json,
    task_run_json,
)
from ._emulator_settings import job_settings, reset_settings, updated_settings

__all__ = ["ApiError", "JobsModel", "JsonDict", "Outcome", "RunRecord", "invalid"]

MAX_OUTPUT_BYTES = 5 * 1024 * 1024
MULTI_TASK_REFUSAL = (
    "Retrieving the output of runs with multiple tasks is not supported. "
    "Please retrieve the output of each individual task run instead."
)
_UNSUCCESSFUL = frozenset({"FAILED", "TIMEDOUT", "CANCELED", "INTERNAL_ERROR"})


class JobsModel:
    """The emulated Jobs service state.  Call every method with the lock held."""

    def __init__(self, *, workspace_id: str, user_name: str) -> None:
        self.base_url = ""  # set when the server starts
        self.workspace_id = workspace_id
        self.user_name = user_name
        self.display_name = user_name  # a service principal's differs (see scim_me)
        self.default_duration = 0.05
        self.pending_duration = 0.0
        self.hold_runs = False  # every run stays RUNNING until released
        self.outcome_parameter = "backfill_key"
        self.runs_list_order = "start_time"  # "end_time", "unordered": see _emulator_records
        self._jobs: dict[int, JobRecord] = {}
        self._runs: dict[int, RunRecord] = {}
        self._queues: dict[int, _JobQueue] = {}
        self._tokens: dict[tuple[int, str], int] = {}
        self._outcomes: dict[tuple[int | None, str], Outcome] = {}
        self._executions: dict[tuple[int, str | None], int] = {}
        self._task_logs: dict[int, str] = {}  # task run id -> its logs (runs/get-output)
        self._notebook_results: dict[int, str] = {}  # task run id -> its notebook exit value
        self.run_now_bodies: list[dict[str, Any]] = []  # every run-now request, in order
        self.job_change_bodies: list[tuple[str, dict[str, Any]]] = []  # create/update/reset
        self._next_job_id = 1001
        self._next_run_id = 5001
        self._task_run_ids = itertools.count(900_000_001)
        self.clock = EmulatorClock()  # epoch times tests can move forward; run retention

    # -- time ----------------------------------------------------------------------

    def references(self, run: RunRecord) -> dict[str, str]:
        """The dynamic value references ``run`` answers (see ``_emulator_refs``)."""
        return run_references(
            job_id=run.job_id,
            run_id=run.run_id,
            trigger_ms=self.clock.epoch_ms(run.created),
            parameters=run.job_parameters,
        )

    def advance(self, now: float) -> None:
        """Replay every slot release up to ``now`` and refresh active run states."""
        for job_id, q in self._queues.items():
            while q.active:
                first = min(q.active, key=lambda r: (r.planned_end or 0.0, r.run_id))
                assert first.planned_end is not None
                if first.planned_end > now:
                    break
                self._finish(first, first.planned_end, first.planned_result, first.planned_message)
                q.active.remove(first)
                self._admit_waiting(job_id, first.planned_end)
            for run in q.active:
                assert run.started is not None
                run.life_cycle_state = "RUNNING" if now >= run.started else "PENDING"

    def next_event(self) -> float | None:
        """Earliest planned end among active runs (``None`` when idle, ``inf`` when held)."""
        ends = [r.planned_end for q in self._queues.values() for r in q.active if r.planned_end]
        return min(ends) if ends else None

    def _admit_waiting(self, job_id: int, at: float) -> None:
        job = self._jobs[job_id]
        q = self._queues[job_id]
        while q.waiting and len(q.active) < job.max_concurrent_runs:
            run = q.waiting.popleft()
            self._admit(job, run, max(at, run.created))

    def _admit(self, job: JobRecord, run: RunRecord, at: float) -> None:
        key = (job.job_id, run.outcome_key)
        attempt = self._executions.get(key, 0) + 1
        self._executions[key] = attempt
        outcome = self._outcome_for(job.job_id, run.outcome_key)
        duration = self.default_duration if outcome.duration is None else outcome.duration
        if attempt <= outcome.fail_attempts:
            result = "FAILED"
            message = outcome.message or f"Emulated failure of attempt {attempt}"
        else:
            result = outcome.result
            message = outcome.message if result != "SUCCESS" else ""
        timeout = job.timeout_seconds
        if timeout > 0 and duration > timeout:
            duration, result = timeout, "TIMEDOUT"
            message = f"Run timed out after {timeout:g} seconds"
        run.attempt = attempt
        run.admitted = at
        run.started = at + self.pending_duration
        run.planned_end = math.inf if outcome.hold or self.hold_runs else run.started + duration
        run.planned_result = result
        run.planned_message = message
        run.life_cycle_state = "PENDING"
        run.state_message = ""
        self._queues[job.job_id].active.append(run)

    def _finish(self, run: RunRecord, at: float, result: str, message: str) -> None:
        run.ended = at
        run.result_state = "FAILED" if result == "INTERNAL_ERROR" else result
        run.life_cycle_state = "INTERNAL_ERROR" if result == "INTERNAL_ERROR" else "TERMINATED"
        run.state_message = message
        run.user_cancelled_or_timedout = result in ("CANCELED", "TIMEDOUT")

    def _skip(self, run: RunRecord, result: str, message: str) -> None:
        run.ended = run.created
        run.life_cycle_state = "SKIPPED"
        run.result_state = result
        run.state_message = message

    def _outcome_for(self, job_id: int, key: str | None) -> Outcome:
        if key is not None:
            for scope in ((job_id, key), (None, key)):
                if scope in self._outcomes:
                    return self._outcomes[scope]
        return Outcome()

    # -- test-side API -------------------------------------------------------------

    def set_outcome(self, key: str, job_id: int | None, outcome: Outcome) -> None:
        if outcome.result not in OUTCOME_RESULTS:
            raise ValueError(f"result must be one of {sorted(OUTCOME_RESULTS)}")
        if outcome.fail_attempts < 0 or (outcome.duration is not None and outcome.duration < 0):
            raise ValueError("fail_attempts and duration must not be negative")
        self._outcomes[(job_id, key)] = outcome

    def snapshot_runs(self, job_id: int | None) -> list[RunRecord]:
        return [
            dataclasses.replace(
                r, job_parameters=dict(r.job_parameters), iterations=dict(r.iterations)
            )
            for r in sorted(self._runs.values(), key=lambda r: r.run_id)
            if (job_id is None or r.job_id == job_id) and not self.clock.removed(r)
        ]

    # -- jobs ----------------------------------------------------------------------

    def create_job(self, body: Mapping[str, Any], now: float) -> int:
        settings = job_settings(body)
        job_id = self._next_job_id
        self.job_change_bodies.append(("create", {**copied_body(body), "job_id": job_id}))
        self._next_job_id += 1
        self._jobs[job_id] = JobRecord(job_id, settings, self.clock.epoch_ms(now))
        self._queues[job_id] = _JobQueue()
        return job_id

    def change_job(self, body: Mapping[str, Any], now: float, *, reset: bool) -> JsonDict:
        """``jobs/reset`` (``reset``) or ``jobs/update``; queued runs may start at once."""
        job = self._job(require_int(body.get("job_id"), "job_id"))
        job.settings = reset_settings(body) if reset else updated_settings(job.settings, body)
        self.job_change_bodies.append(("reset" if reset else "update", copied_body(body)))
        self.advance(now)
        self._admit_waiting(job.job_id, now)  # a higher max_concurrent_runs frees slots
        self.advance(now)
        return {}

    def _job(self, job_id: int) -> JobRecord:
        job = self._jobs.get(job_id)
        if job is None:
            raise invalid(f"Job {job_id} does not exist.")
        return job

    def get_job(self, job_id: int) -> JsonDict:
        return job_json(self._job(job_id), self.user_name, expand_tasks=True)

    def list_jobs(self, params: Mapping[str, Any]) -> JsonDict:
        name, token = params.get("name"), params.get("page_token")
        limit, offset = opt_int(params, "limit"), opt_int(params, "offset")
        expand_tasks = opt_bool(params, "expand_tasks")
        limit = check_limit(limit, MAX_JOBS_LIST_LIMIT, zero_means_max=False)
        jobs = sorted(self._jobs.values(), key=lambda j: -j.job_id)  # newest first
        if name is not None:
            jobs = [j for j in jobs if j.name.lower() == name.lower()]
        found, token = page(jobs, lambda j: (-j.job_id,), limit, offset, token, "after")
        listed = [job_json(j, self.user_name, expand_tasks=expand_tasks) for j in found]
        return _page_json("jobs", listed, token)

    # -- runs ----------------------------------------------------------------------

    def run_now(self, body: Mapping[str, Any], now: float) -> JsonDict:
        self.run_now_bodies.append(copied_body(body))
        job = self._job(require_int(body.get("job_id"), "job_id"))
        token = body.get("idempotency_token")
        if token is not None:
            if not isinstance(token, str):
                raise invalid("idempotency_token must be a string")
            if len(token) > MAX_IDEMPOTENCY_TOKEN_LENGTH:
                raise invalid(
                    f"idempotency_token must have at most {MAX_IDEMPOTENCY_TOKEN_LENGTH} "
                    f"characters, got {len(token)}"
                )
            existing = self._tokens.get((job.job_id, token))
            if existing is not None:
                if self.clock.removed(self._runs[existing], now):
                    # "If a run with the provided token is deleted, an error is returned"
                    # (databricks-sdk JobsAPI.run_now); the error's code is not documented
                    raise invalid(f"The run created with idempotency token {token} was deleted.")
                return {"run_id": existing, "number_in_job": existing}
        overrides, queue = run_now_options(body)
        queue_enabled = bool(queue["enabled"]) if queue is not None else job.queue_enabled
        only = only_tasks(body.get("only"), job.task_keys)
        self.advance(now)
        params = {**job.parameter_defaults, **overrides}
        run_id = self._next_run_id
        self._next_run_id += 1
        tasks = tuple(next(self._task_run_ids) for _ in only or job.task_keys)
        iterations: dict[int, tuple[int, ...]] = {}
        for key, task_run_id in zip(only or job.task_keys, tasks, strict=True):
            if (loop := job.task_settings(key).get("for_each_task")) is not None:
                count = iteration_count(loop, params)
                iterations[task_run_id] = tuple(next(self._task_run_ids) for _ in range(count))
        run = RunRecord(
            run_id=run_id,
            job_id=job.job_id,
            run_name=job.name,
            job_parameters=params,
            idempotency_token=token,
            outcome_key=params.get(self.outcome_parameter),
            queue_enabled=queue_enabled,
            created=now,
            task_run_ids=tasks,
            only=only,
            iterations=iterations,
        )
        self._runs[run_id] = run
        if token is not None:
            self._tokens[(job.job_id, token)] = run_id

        q = self._queues[job.job_id]
        limit = job.max_concurrent_runs
        if len(q.active) < limit:
            self._admit(job, run, now)
            self.advance(now)
        elif limit == 0 or not queue_enabled:
            self._skip(
                run,
                "MAXIMUM_CONCURRENT_RUNS_REACHED",
                f"Skipping this run because the limit of {limit} maximum concurrent runs "
                "has been reached.",
            )
        elif len(q.waiting) >= MAX_QUEUE_SIZE:
            self._skip(
                run,
                "MAX_JOB_QUEUE_SIZE_EXCEEDED",
                f"Skipping this run because the job queue is full ({MAX_QUEUE_SIZE} runs).",
            )
        else:
            run.life_cycle_state = "QUEUED"
            run.was_queued = True
            run.state_message = (
                f"Queued due to reaching maximum concurrent runs of {limit}. "
                "The run will start once a slot is free."
            )
            q.waiting.append(run)
        return {"run_id": run_id, "number_in_job": run_id}

    def _run(self, run_id: int, now: float) -> RunRecord:
        run = self._runs.get(run_id)
        if run is None or self.clock.removed(run, now):  # removed after 60 days: see the clock
            raise invalid(f"Run {run_id} does not exist.")
        return run

    def get_run(self, run_id: int, now: float, page_token: str | None = None) -> JsonDict:
        """``runs/get`` of a job run, or of a for-each task run (see ``_emulator_render``)."""
        self.advance(now)
        run = self._run_of_task(run_id)
        if run is not None and run_id in run.iterations and not self.clock.removed(run, now):
            job_run = self._run_json(run, now, include_tasks=True)
            task_run = task_run_json(job_run, run_id)
            return for_each_run_json(task_run, run.iterations[run_id], page_token)
        return self._run_json(self._run(run_id, now), now, include_tasks=True)

    def job_of_run(self, run_id: int) -> int | None:
        """The job of run ``run_id`` (``None``: no such run; its request answers that)."""
        run = self._runs.get(run_id)
        return None if run is None else run.job_id

    def cancel_run(self, run_id: int, now: float) -> JsonDict:
        self.advance(now)
        self._cancel(self._run(run_id, now), now)
        return {}

    def cancel_all(self, job_id: int | None, all_queued_runs: bool, now: float) -> JsonDict:
        if job_id is None and not all_queued_runs:
            raise invalid("Either job_id or all_queued_runs must be specified.")
        if job_id is not None:
            self._job(job_id)
        self.advance(now)
        for run in list(self._runs.values()):
            if job_id is not None and run.job_id != job_id:
                continue
            if job_id is None and run.life_cycle_state != "QUEUED":
                continue
            self._cancel(run, now)
        return {}

    def _cancel(self, run: RunRecord, now: float) -> None:
        if not run.active:
            return  # already finished: a no-op, like the real API
        q = self._queues[run.job_id]
        if run.life_cycle_state == "QUEUED":
            q.waiting.remove(run)
        else:
            q.active.remove(run)
            if run.started is not None and run.started > now:
                run.started = None  # cancelled while PENDING: never RUNNING
        self._finish(run, now, "CANCELED", "Run cancelled.")
        self._admit_waiting(run.job_id, now)
        self.advance(now)

    def list_runs(self, params: Mapping[str, Any], now: float) -> JsonDict:
        job_id = opt_int(params, "job_id")
        active_only = opt_bool(params, "active_only")
        completed_only = opt_bool(params, "completed_only")
        limit = opt_int(params, "limit")
        offset = opt_int(params, "offset")
        start_time_from = opt_int(params, "start_time_from")
        start_time_to = opt_int(params, "start_time_to")
        run_type = params.get("run_type")
        expand = opt_bool(params, "expand_tasks")
        if active_only and completed_only:
            raise invalid("active_only and completed_only cannot both be true.")
        limit = check_limit(limit, MAX_RUNS_LIST_LIMIT, zero_means_max=True)
        if job_id is not None:
            self._job(job_id)
        self.advance(now)
        order = list_order(self.runs_list_order, self.clock.epoch_ms)  # never by run id
        selected = [
            r
            for r in self._runs.values()
            if (job_id is None or r.job_id == job_id)
            and (not active_only or r.active)
            and (not completed_only or not r.active)
            # "runs that started at or after/before" (list_runs docstring): r.created
            and (start_time_from is None or self.clock.epoch_ms(r.created) >= start_time_from)
            and (start_time_to is None or self.clock.epoch_ms(r.created) <= start_time_to)
            and (run_type is None or run_type == "JOB_RUN")
            and not self.clock.removed(r, now)  # runs are removed after 60 days: see the clock
        ]
        selected.sort(key=order)
        found, token = page(selected, order, limit, offset, params.get("page_token"), "runs")
        listed = [self._run_json(r, now, include_tasks=expand) for r in found]
        return _page_json("runs", listed, token)

    # -- rendering -----------------------------------------------------------------

    def _run_json(self, run: RunRecord, now: float, *, include_tasks: bool) -> JsonDict:
        return run_json(
            self._jobs[run.job_id],
            run,
            now,
            epoch_ms=self.clock.epoch_ms,
            base_url=self.base_url,
            workspace_id=self.workspace_id,
            user_name=self.user_name,
            include_tasks=include_tasks,
        )

    # -- runs/get-output ------------------------------------------------------------

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
        """``runs/get-output`` of task run ``run_id`` (see the module doc)."""
        self.advance(now)
        run = self._run_of_task(run_id)
        if run is None or self.clock.removed(run, now):  # removed after 60 days
            raise invalid(f"Run {run_id} does not exist.")
        if run_id == run.run_id and run.task_run_ids:
            raise invalid(MULTI_TASK_REFUSAL)
        job_run = self._run_json(run, now, include_tasks=True)
        parent = next((t for t, ids in run.iterations.items() if run_id in ids), None)
        if parent is not None:  # an iteration of a for-each task
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


def _page_json(key: str, items: list[JsonDict], token: str | None) -> JsonDict:
    """A list answer: ``has_more``, ``key`` unless empty (the real API omits empty arrays)."""
    out: JsonDict = {"has_more": token is not None}
    if items:
        out[key] = items
    if token:
        out["next_page_token"] = token
    return out
