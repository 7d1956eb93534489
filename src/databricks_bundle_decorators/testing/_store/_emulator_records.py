"""Value records and request helpers of the emulated Jobs service (no HTTP, no state).

Constants mirror the real service's limits; :class:`ApiError` carries the status code
and ``error_code`` the real service answers with.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ._emulator_limits import job_limit_problem
from ._emulator_refs import references_problem

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
    hold: bool = False  # stay RUNNING until ``JobsEmulator.release``


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

    def task_settings(self, key: str) -> JsonDict:
        """The settings of task ``key`` (``{}`` when the job has none by that key)."""
        tasks: list[JsonDict] = self.settings.get("tasks") or []
        return next((t for t in tasks if t.get("task_key") == key), {})


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
    only: tuple[str, ...] = ()  # run-now's ``only``: the tasks this run has (empty: all)
    trigger: str = "ONE_TIME"  # jobs.TriggerType; TABLE for a fired table-update trigger
    #: for-each task run id -> the run ids of its iterations, in input order
    iterations: dict[int, tuple[int, ...]] = field(default_factory=dict)

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


def job_settings(body: Mapping[str, Any]) -> JsonDict:
    """Validated JobSettings JSON for ``jobs/create``, with the service's defaults."""
    settings = copy.deepcopy(dict(body))
    # ``run_as`` is kept: ``JobSettings.run_as`` is "the user or service principal that the job
    # runs as, if specified in the request" (databricks-sdk-py ``jobs.JobSettings``)
    settings.pop("access_control_list", None)
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
        isinstance(p, dict) and isinstance(p.get("name"), str) and "default" in p for p in params
    ):
        raise invalid("parameters must be a list of {name, default} objects")
    _check_triggers(settings)
    if (problem := references_problem(settings)) is not None:
        raise invalid(problem)
    if (limit := job_limit_problem(settings)) is not None:
        raise invalid(limit)
    return settings


#: The settings that start runs on their own; each has a ``pause_status``.
TRIGGER_FIELDS = ("schedule", "trigger", "continuous")
PAUSE_STATUSES = ("PAUSED", "UNPAUSED")


def _check_triggers(settings: JsonDict) -> None:
    """Validate ``schedule``/``trigger``/``continuous``; the service stores an omitted
    ``pause_status`` as ``UNPAUSED``."""
    for name in TRIGGER_FIELDS:
        block = settings.get(name)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise invalid(f"{name} must be an object")
        if name == "schedule":
            for required in ("quartz_cron_expression", "timezone_id"):
                if not isinstance(block.get(required), str) or not block[required]:
                    raise invalid(f"Missing required field: schedule.{required}")
        status = block.setdefault("pause_status", "UNPAUSED")
        if status not in PAUSE_STATUSES:
            raise invalid(
                f"Invalid value for {name}.pause_status: {status!r} (expected PAUSED or UNPAUSED)"
            )


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


def only_tasks(value: object, task_keys: Sequence[str]) -> tuple[str, ...]:
    """run-now's ``only``: task keys of the job (``()`` when absent: every task)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid("only must be a list of task keys")
    unknown = [key for key in value if key not in task_keys]
    if unknown:
        raise invalid(f"Task key {unknown[0]!r} in 'only' does not exist in the job")
    return tuple(key for key in task_keys if key in value)


def copied_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a request body, as recorded (later changes to it do not leak in)."""
    return copy.deepcopy(dict(body))


def run_now_options(body: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any] | None]:
    """run-now's ``job_parameters`` and ``queue``, validated as the real API does."""
    overrides = body.get("job_parameters") or {}
    if not isinstance(overrides, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in overrides.items()
    ):
        raise invalid("job_parameters must be a map of string to string")
    if (problem := references_problem(overrides, "job_parameters")) is not None:
        raise invalid(problem)
    queue = body.get("queue")
    if queue is not None and not (isinstance(queue, dict) and "enabled" in queue):
        raise invalid("queue must be an object with the required field 'enabled'")
    return overrides, queue
