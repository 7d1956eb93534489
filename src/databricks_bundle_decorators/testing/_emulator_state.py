"""In-memory model of the Databricks Jobs service behind :class:`JobsEmulator`.

This module knows nothing about HTTP: it takes parsed request parameters, applies the
Jobs 2.2 semantics (concurrency limits, queueing, idempotency tokens, cancellation,
paging) and returns JSON-ready dicts shaped like the real API responses, or raises
:class:`ApiError` carrying the status code and ``error_code`` the real service uses.

Run state is computed lazily from ``time.monotonic()`` timestamps: every public
method first *advances* the model to "now", replaying slot releases in time order so
that a queued run's RUNNING interval starts exactly when an earlier run's slot freed.
No thread per run is ever created.

The model is not thread-safe by itself; the caller (the emulator) holds one lock
around every call.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

JsonDict = dict[str, Any]
_T = TypeVar("_T")

#: Life-cycle states in which a run still counts as active (``active_only``).
ACTIVE_STATES = frozenset({"QUEUED", "PENDING", "RUNNING", "TERMINATING"})
#: Results accepted by :meth:`JobsModel.set_outcome`.
OUTCOME_RESULTS = frozenset(
    {"SUCCESS", "FAILED", "TIMEDOUT", "CANCELED", "SUCCESS_WITH_FAILURES", "INTERNAL_ERROR"}
)
#: Per-job queue limit of the real service; runs beyond it are skipped.
MAX_QUEUE_SIZE = 1000
MAX_IDEMPOTENCY_TOKEN_LENGTH = 64
MAX_RUNS_LIST_LIMIT = 25
MAX_JOBS_LIST_LIMIT = 100
DEFAULT_LIST_LIMIT = 20

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


class ApiError(Exception):
    """An error answer: HTTP status plus the ``{"error_code", "message"}`` body."""

    def __init__(self, status: int, error_code: str, message: str) -> None:
        super().__init__(f"{status} {error_code}: {message}")
        self.status = status
        self.error_code = error_code
        self.message = message

    def body(self) -> JsonDict:
        return {"error_code": self.error_code, "message": self.message}


def invalid(message: str) -> ApiError:
    return ApiError(400, "INVALID_PARAMETER_VALUE", message)


@dataclass(frozen=True)
class Outcome:
    """How runs for one ``backfill_key`` value behave (see ``JobsEmulator.set_outcome``)."""

    duration: float | None = None
    fail_attempts: int = 0
    result: str = "SUCCESS"
    message: str = ""


@dataclass
class JobRecord:
    """A job as stored by the emulator; ``settings`` is raw JobSettings JSON."""

    job_id: int
    settings: JsonDict
    created_time_ms: int

    @property
    def name(self) -> str:
        return str(self.settings.get("name", "Untitled"))

    @property
    def max_concurrent_runs(self) -> int:
        return int(self.settings.get("max_concurrent_runs", 1))

    @property
    def queue_enabled(self) -> bool:
        queue = self.settings.get("queue")
        return bool(queue.get("enabled")) if isinstance(queue, dict) else False

    @property
    def timeout_seconds(self) -> float:
        return float(self.settings.get("timeout_seconds") or 0)

    @property
    def parameter_defaults(self) -> dict[str, str]:
        params = self.settings.get("parameters") or []
        return {str(p["name"]): str(p.get("default", "")) for p in params}

    @property
    def task_keys(self) -> list[str]:
        return [str(t.get("task_key", "")) for t in self.settings.get("tasks") or []]


@dataclass
class RunRecord:
    """One job run.  Times are ``time.monotonic()`` values; ``None`` = not reached.

    ``attempt`` is the 1-based number of this execution among the runs of the same
    job and outcome key (the ``backfill_key`` job parameter) that actually started
    executing; it is assigned when the run gets a concurrency slot (0 before that,
    and for runs that were skipped or cancelled while queued).
    """

    run_id: int
    job_id: int
    run_name: str
    job_parameters: dict[str, str]
    idempotency_token: str | None
    outcome_key: str | None
    queue_enabled: bool
    created: float
    attempt: int = 0
    admitted: float | None = None  # got a concurrency slot (PENDING begins)
    started: float | None = None  # RUNNING begins
    ended: float | None = None
    planned_end: float | None = None
    planned_result: str = "SUCCESS"
    planned_message: str = ""
    was_queued: bool = False
    life_cycle_state: str = "PENDING"
    result_state: str | None = None
    state_message: str = ""
    user_cancelled_or_timedout: bool = False
    task_run_ids: tuple[int, ...] = ()

    @property
    def active(self) -> bool:
        return self.life_cycle_state in ACTIVE_STATES


@dataclass
class _JobQueue:
    active: list[RunRecord] = field(default_factory=list)
    waiting: deque[RunRecord] = field(default_factory=deque)


def _encode_token(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"after:{last_id}".encode()).decode().rstrip("=")


def _decode_token(token: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        kind, _, value = raw.partition(":")
        if kind != "after":
            raise ValueError(raw)
        return int(value)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid(f"Invalid page_token: {token!r}") from None


class JobsModel:
    """The emulated Jobs service state.  Call every method with the lock held."""

    def __init__(self, *, base_url: str, workspace_id: str, user_name: str) -> None:
        self.base_url = base_url
        self.workspace_id = workspace_id
        self.user_name = user_name
        self.default_duration = 0.05
        self.pending_duration = 0.0
        self.outcome_parameter = "backfill_key"
        self._jobs: dict[int, JobRecord] = {}
        self._runs: dict[int, RunRecord] = {}
        self._queues: dict[int, _JobQueue] = {}
        self._tokens: dict[tuple[int, str], int] = {}
        self._outcomes: dict[tuple[int | None, str], Outcome] = {}
        self._executions: dict[tuple[int, str | None], int] = {}
        self._next_job_id = 1001
        self._next_run_id = 5001
        self._next_task_run_id = 900_000_001
        self._mono0 = time.monotonic()
        self._wall0 = time.time()

    # -- time ----------------------------------------------------------------------

    def epoch_ms(self, mono: float) -> int:
        return int((self._wall0 + (mono - self._mono0)) * 1000)

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
        """Earliest planned end among active runs (``None`` when idle)."""
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
        run.planned_end = run.started + duration
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
            dataclasses.replace(r, job_parameters=dict(r.job_parameters))
            for r in sorted(self._runs.values(), key=lambda r: r.run_id)
            if job_id is None or r.job_id == job_id
        ]

    # -- jobs ----------------------------------------------------------------------

    def create_job(self, body: Mapping[str, Any], now: float) -> int:
        settings = copy.deepcopy(dict(body))
        for not_a_setting in ("access_control_list", "run_as"):
            settings.pop(not_a_setting, None)
        settings.setdefault("name", "Untitled")
        settings.setdefault("max_concurrent_runs", 1)
        settings.setdefault("timeout_seconds", 0)
        settings.setdefault("email_notifications", {})
        settings.setdefault("format", "MULTI_TASK")
        mcr = settings["max_concurrent_runs"]
        if not isinstance(mcr, int) or isinstance(mcr, bool) or not 0 <= mcr <= 1000:
            raise invalid("max_concurrent_runs must be an integer between 0 and 1000")
        queue = settings.get("queue")
        if queue is not None and not (isinstance(queue, dict) and "enabled" in queue):
            raise invalid("queue must be an object with the required field 'enabled'")
        params = settings.get("parameters") or []
        if not isinstance(params, list) or not all(
            isinstance(p, dict) and isinstance(p.get("name"), str) and "default" in p
            for p in params
        ):
            raise invalid("parameters must be a list of {name, default} objects")
        job_id = self._next_job_id
        self._next_job_id += 1
        self._jobs[job_id] = JobRecord(job_id, settings, self.epoch_ms(now))
        self._queues[job_id] = _JobQueue()
        return job_id

    def _job(self, job_id: int) -> JobRecord:
        job = self._jobs.get(job_id)
        if job is None:
            raise invalid(f"Job {job_id} does not exist.")
        return job

    def _job_json(self, job: JobRecord, *, expand_tasks: bool) -> JsonDict:
        settings = copy.deepcopy(job.settings)
        if not expand_tasks:
            settings.pop("tasks", None)
            settings.pop("job_clusters", None)
        return {
            "job_id": job.job_id,
            "creator_user_name": self.user_name,
            "run_as_user_name": self.user_name,
            "created_time": job.created_time_ms,
            "settings": settings,
        }

    def get_job(self, job_id: int) -> JsonDict:
        return self._job_json(self._job(job_id), expand_tasks=True)

    def list_jobs(
        self,
        *,
        name: str | None,
        limit: int | None,
        offset: int | None,
        page_token: str | None,
        expand_tasks: bool,
    ) -> JsonDict:
        limit = _check_limit(limit, MAX_JOBS_LIST_LIMIT, zero_means_max=False)
        jobs = sorted(self._jobs.values(), key=lambda j: -j.job_id)  # newest first
        if name is not None:
            jobs = [j for j in jobs if j.name.lower() == name.lower()]
        page, more = _page(jobs, [j.job_id for j in jobs], limit, offset, page_token)
        out: JsonDict = {
            "jobs": [self._job_json(j, expand_tasks=expand_tasks) for j in page],
            "has_more": more,
        }
        if more:
            out["next_page_token"] = _encode_token(page[-1].job_id)
        if not page:
            del out["jobs"]  # the real API omits empty arrays
        return out

    # -- runs ----------------------------------------------------------------------

    def run_now(self, body: Mapping[str, Any], now: float) -> JsonDict:
        job = self._job(_require_int(body.get("job_id"), "job_id"))
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
                return {"run_id": existing, "number_in_job": existing}
        overrides = body.get("job_parameters") or {}
        if not isinstance(overrides, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in overrides.items()
        ):
            raise invalid("job_parameters must be a map of string to string")
        queue = body.get("queue")
        if queue is not None and not (isinstance(queue, dict) and "enabled" in queue):
            raise invalid("queue must be an object with the required field 'enabled'")
        queue_enabled = bool(queue["enabled"]) if queue is not None else job.queue_enabled

        self.advance(now)
        params = {**job.parameter_defaults, **overrides}
        run_id = self._next_run_id
        self._next_run_id += 1
        tasks = tuple(range(self._next_task_run_id, self._next_task_run_id + len(job.task_keys)))
        self._next_task_run_id += len(tasks)
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

    def _run(self, run_id: int) -> RunRecord:
        run = self._runs.get(run_id)
        if run is None:
            raise invalid(f"Run {run_id} does not exist.")
        return run

    def get_run(self, run_id: int, now: float) -> JsonDict:
        self.advance(now)
        return self._run_json(self._run(run_id), now, include_tasks=True)

    def cancel_run(self, run_id: int, now: float) -> JsonDict:
        self.advance(now)
        self._cancel(self._run(run_id), now)
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

    def list_runs(
        self,
        *,
        job_id: int | None,
        active_only: bool,
        completed_only: bool,
        limit: int | None,
        offset: int | None,
        page_token: str | None,
        start_time_from: int | None,
        start_time_to: int | None,
        run_type: str | None,
        expand_tasks: bool,
        now: float,
    ) -> JsonDict:
        if active_only and completed_only:
            raise invalid("active_only and completed_only cannot both be true.")
        limit = _check_limit(limit, MAX_RUNS_LIST_LIMIT, zero_means_max=True)
        if job_id is not None:
            self._job(job_id)
        self.advance(now)
        runs = sorted(self._runs.values(), key=lambda r: -r.run_id)  # newest first
        selected = [
            r
            for r in runs
            if (job_id is None or r.job_id == job_id)
            and (not active_only or r.active)
            and (not completed_only or not r.active)
            and (start_time_from is None or self.epoch_ms(r.created) >= start_time_from)
            and (start_time_to is None or self.epoch_ms(r.created) <= start_time_to)
            and (run_type is None or run_type == "JOB_RUN")
        ]
        page, more = _page(selected, [r.run_id for r in selected], limit, offset, page_token)
        out: JsonDict = {"has_more": more}
        if page:
            out["runs"] = [self._run_json(r, now, include_tasks=expand_tasks) for r in page]
        if more:
            out["next_page_token"] = _encode_token(page[-1].run_id)
        return out

    # -- rendering -----------------------------------------------------------------

    def _run_json(self, run: RunRecord, now: float, *, include_tasks: bool) -> JsonDict:
        job = self._jobs[run.job_id]
        state = self._state_json(run)
        status = self._status_json(run)
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
            "creator_user_name": self.user_name,
            "run_name": run.run_name,
            "run_type": "JOB_RUN",
            "trigger": "ONE_TIME",
            "format": "MULTI_TASK",
            "state": state,
            "status": status,
            "start_time": self.epoch_ms(run.created),
            "end_time": self.epoch_ms(end) if end is not None else 0,
            "setup_duration": 0,
            "execution_duration": 0,
            "cleanup_duration": 0,
            "run_duration": int(((end if end is not None else now) - run.created) * 1000),
            "queue_duration": max(0, int((queue_end - run.created) * 1000)),
            "run_page_url": (
                f"{self.base_url}/?o={self.workspace_id}#job/{run.job_id}/run/{run.run_id}"
            ),
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
                    "start_time": self.epoch_ms(run.started) if run.started else 0,
                    "end_time": out["end_time"],
                    "setup_duration": 0,
                    "execution_duration": exec_ms,
                    "cleanup_duration": 0,
                    "run_page_url": f"{out['run_page_url']}/task/{task_run_id}",
                }
                for key, task_run_id in zip(job.task_keys, run.task_run_ids, strict=True)
            ]
        return out

    @staticmethod
    def _state_json(run: RunRecord) -> JsonDict:
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

    @staticmethod
    def _status_json(run: RunRecord) -> JsonDict:
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


# -- parameter helpers ---------------------------------------------------------------


def _require_int(value: object, name: str) -> int:
    if value is None:
        raise invalid(f"Missing required field: {name}")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise invalid(f"Invalid value for {name}: {value!r}")
    try:
        return int(value)
    except ValueError:
        raise invalid(f"Invalid value for {name}: {value!r}") from None


def _check_limit(limit: int | None, maximum: int, *, zero_means_max: bool) -> int:
    if limit is None:
        return DEFAULT_LIST_LIMIT
    if limit == 0 and zero_means_max:
        return maximum
    if not 0 < limit <= maximum:
        raise invalid(f"limit must be between 1 and {maximum}, got {limit}")
    return limit


def _page(
    items: list[_T], ids: list[int], limit: int, offset: int | None, page_token: str | None
) -> tuple[list[_T], bool]:
    """Slice a newest-first list by cursor token (ids are descending) or offset."""
    start = 0
    if page_token:
        after = _decode_token(page_token)
        start = next((i for i, item_id in enumerate(ids) if item_id < after), len(ids))
    elif offset:
        if offset < 0:
            raise invalid(f"offset must not be negative, got {offset}")
        start = offset
    page = items[start : start + limit]
    return page, start + limit < len(items)
