"""Records of the emulated Jobs service, its clock, list order and pages (no HTTP, no state)."""

from __future__ import annotations

import base64
import binascii
import bisect
import copy
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

from ._emulator_refs import references_problem

JsonDict = dict[str, Any]
_T = TypeVar("_T")

#: Life-cycle states in which a run still counts as active (``active_only``).
ACTIVE_STATES = frozenset({"QUEUED", "PENDING", "RUNNING", "TERMINATING"})
OUTCOME_RESULTS = frozenset(
    {"SUCCESS", "FAILED", "TIMEDOUT", "CANCELED", "SUCCESS_WITH_FAILURES", "INTERNAL_ERROR"}
)
MAX_QUEUE_SIZE = 1000  # per job; runs beyond it are skipped
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


# -- the clock -------------------------------------------------------------------------
# Runs are scheduled on ``time.monotonic()`` (durations stay real); every epoch time the
# service shows comes from this clock, which a test may move forward (``jump``).

#: "Runs are automatically removed after 60 days" (Jobs API reference, ``runs/get-output``,
#: https://docs.databricks.com/api/workspace/jobs/getrunoutput; databricks-sdk-py 0.162.0
#: ``JobsAPI.get_run_output``). A removed run is gone from ``runs/list`` and ``runs/get``
#: answers 400 ``INVALID_PARAMETER_VALUE`` (the same docstring: "returns an HTTP status code
#: 400 if the run_id parameter is invalid"). From which instant is not said: the emulator
#: counts from the run's start, the least convenient reading, once the run has ended.
RUN_RETENTION_MS = 60 * 24 * 3600 * 1000


class EmulatorClock:
    """Epoch milliseconds for monotonic instants, with forward jumps."""

    def __init__(self) -> None:
        self._mono0 = time.monotonic()
        self._wall0 = time.time()
        self._jumps_at: list[float] = []  # monotonic instants of the jumps, ascending
        self._jumped: list[float] = []  # seconds jumped in total up to each of them

    def epoch_ms(self, mono: float) -> int:
        index = bisect.bisect_right(self._jumps_at, mono)
        shift = self._jumped[index - 1] if index else 0.0
        return int((self._wall0 + (mono - self._mono0) + shift) * 1000)

    def offset(self, seconds: float) -> None:
        """Set the clock ``seconds`` ahead of this machine's (behind if negative)."""
        self._wall0 = time.time() + seconds - (time.monotonic() - self._mono0)

    def jump(self, seconds: float, at: float) -> None:
        """Move the clock ``seconds`` forward from monotonic instant ``at`` on.

        Raises:
            ValueError: ``seconds`` is negative (the clock never goes back).
        """
        if seconds < 0:
            raise ValueError(f"the emulator clock only moves forward, not by {seconds} s")
        total = (self._jumped[-1] if self._jumped else 0.0) + seconds
        at = max(at, self._jumps_at[-1]) if self._jumps_at else at
        self._jumps_at.append(at)
        self._jumped.append(total)

    def removed(self, run: RunRecord, now: float | None = None) -> bool:
        """Whether the service no longer keeps ``run`` (see :data:`RUN_RETENTION_MS`)."""
        if run.active:
            return False
        at = time.monotonic() if now is None else now
        return self.epoch_ms(at) - self.epoch_ms(run.created) >= RUN_RETENTION_MS


# -- list order and pages --------------------------------------------------------------
# ``runs/list`` is newest first by start time ("List runs in descending order by start
# time", the ``list_runs`` docstring of databricks-sdk-py; "Lists runs from most recently
# started to least", https://databricks.github.io/sdk-js/api/interfaces/_databricks_sdk-jobs.v2.ListRunsRequest.html)
# or, in later releases of the reference, by end time ("List runs in descending order by
# end time. If a run has not finished, it falls back to start time",
# https://docs.databricks.com/api/jobs/v2/list-runs). Never by run id, an opaque
# identifier. Ties (same epoch ms) list the lowest run id first: the documents are
# silent, and this is the least convenient answer for code that assumes id order.
# ``"unordered"`` is neither: an arbitrary order, stable from page to page (a scramble of
# the run id), for code that must not rely on either documented order. A page token is a
# cursor in the chosen order, so a run whose key changes between two pages may move to a
# page already read: the real service promises nothing better.

RunsListOrder = Literal["start_time", "end_time", "unordered"]
RUNS_LIST_ORDERS: tuple[str, ...] = get_args(RunsListOrder)
_SCRAMBLE = 0x9E3779B1  # odd: multiplying by it modulo 2**32 permutes 32-bit ids


def list_order(
    order: str, epoch_ms: Callable[[float], int]
) -> Callable[[RunRecord], tuple[int, ...]]:
    """The sort key of ``order`` (a :data:`RUNS_LIST_ORDERS` value): ascending = listed first."""
    if order not in RUNS_LIST_ORDERS:
        raise ValueError(f"runs/list order must be one of {RUNS_LIST_ORDERS}, got {order!r}")
    if order == "unordered":
        return lambda run: ((run.run_id * _SCRAMBLE) % 2**32, run.run_id)

    def key(run: RunRecord) -> tuple[int, ...]:
        # the time runs/get renders as start_time is r.created
        at = run.ended if order == "end_time" and run.ended is not None else run.created
        return (-epoch_ms(at), run.run_id)

    return key


_TOKEN_SIZES = {"after": 1, "runs": 2}  # page token kind -> the ints of its cursor


def encode_token(kind: str, last: Sequence[int]) -> str:
    raw = ":".join([kind, *map(str, last)])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str, kind: str) -> tuple[int, ...]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        found, *values = raw.split(":")
        if found != kind or len(values) != _TOKEN_SIZES[kind]:
            raise ValueError(raw)
        return tuple(int(v) for v in values)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid(f"Invalid page_token: {token!r}") from None


def page(
    items: Sequence[_T],
    key: Callable[[_T], tuple[int, ...]],
    limit: int,
    offset: int | None,
    page_token: str | None,
    kind: str,
) -> tuple[list[_T], str | None]:
    """One page of ``items`` (sorted by ``key``) and the next page's token, if any."""
    start = 0
    if page_token:
        after = decode_token(page_token, kind)
        start = next((i for i, item in enumerate(items) if key(item) > after), len(items))
    elif offset:
        if offset < 0:
            raise invalid(f"offset must not be negative, got {offset}")
        start = offset
    found = list(items[start : start + limit])
    if start + limit < len(items) and found:
        return found, encode_token(kind, key(found[-1]))
    return found, None


def check_limit(limit: int | None, maximum: int, *, zero_means_max: bool) -> int:
    if limit is None:
        return DEFAULT_LIST_LIMIT
    if limit == 0 and zero_means_max:
        return maximum
    if not 0 < limit <= maximum:
        raise invalid(f"limit must be between 1 and {maximum}, got {limit}")
    return limit


# -- request fields --------------------------------------------------------------------


def as_int(value: object) -> int | None:
    """``value`` as an integer (a JSON number or a numeric string), else ``None``."""
    try:
        return int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else None
    except ValueError:
        return None


def opt_int(params: Mapping[str, Any], name: str) -> int | None:
    value = params.get(name)
    return None if value is None or value == "" else require_int(value, name)


def req_int(params: Mapping[str, Any], name: str) -> int:
    number = opt_int(params, name)
    if number is None:
        raise invalid(f"Missing required field: {name}")
    return number


def opt_bool(params: Mapping[str, Any], name: str) -> bool:
    value = params.get(name)
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, bytes):  # a multipart form's field
        value = value.decode()
    if value in ("true", "false"):
        return bool(value == "true")
    raise invalid(f"Invalid value for {name}: {value!r} (expected true or false)")


def require_int(value: object, name: str) -> int:
    if value is None:
        raise invalid(f"Missing required field: {name}")
    number = as_int(value)
    if number is None:
        raise invalid(f"Invalid value for {name}: {value!r}")
    return number


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
    return copy.deepcopy(dict(body))


def check_queue(queue: object) -> None:
    if queue is not None and not (isinstance(queue, dict) and "enabled" in queue):
        raise invalid("queue must be an object with the required field 'enabled'")


def run_now_options(body: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any] | None]:
    """run-now's ``job_parameters`` and ``queue``, validated as the real API does."""
    overrides = body.get("job_parameters") or {}
    if not isinstance(overrides, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in overrides.items()
    ):
        raise invalid("job_parameters must be a map of string to string")
    if (problem := references_problem(overrides, "job_parameters")) is not None:
        raise invalid(problem)
    check_queue(body.get("queue"))
    return overrides, body.get("queue")
