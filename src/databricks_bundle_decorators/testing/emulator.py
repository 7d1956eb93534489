"""A local HTTP emulator of the Databricks Jobs 2.2 API, for tests and benchmarks.

The emulator is a real HTTP server on ``127.0.0.1`` (ephemeral port, one daemon
thread) that answers the requests the real ``databricks.sdk.WorkspaceClient`` makes,
so code under test talks to it through the genuine SDK -- no mocks::

    from databricks_bundle_decorators.testing.emulator import JobsEmulator

    def test_backfill_day() -> None:
        with JobsEmulator() as emu:
            job_id = emu.create_job("nightly", parameters={"backfill_key": ""})
            emu.set_outcome("2024-01-02", fail_attempts=1)  # first attempt fails
            w = emu.workspace_client()  # WorkspaceClient(host=emu.url, token=..., pat)
            run_id = w.jobs.run_now(job_id, job_parameters={"backfill_key": "2024-01-02"}).run_id
            emu.wait_until_idle()
            assert w.jobs.get_run(run_id).state.result_state.value == "FAILED"

Endpoints (``/api/2.1`` is accepted as an alias of ``/api/2.2``):
``GET /.well-known/databricks-config`` (the SDK's host-metadata probe, sent when a
``Config`` is built), ``GET jobs/list``, ``GET jobs/get``, ``POST jobs/create``,
``POST jobs/run-now``, ``GET jobs/runs/get``, ``GET jobs/runs/list``,
``POST jobs/runs/cancel`` and ``POST jobs/runs/cancel-all``.  Errors use the
``{"error_code", "message"}`` body the SDK maps onto its typed exceptions (unknown
job -> 400 ``INVALID_PARAMETER_VALUE`` "Job N does not exist.", which the SDK turns
into ``ResourceDoesNotExist`` on ``jobs/get`` and ``InvalidParameterValue`` elsewhere).

Runs follow real time (``time.monotonic``): QUEUED (waiting for one of the job's
``max_concurrent_runs`` slots) -> PENDING (``pending_duration``, default 0) ->
RUNNING (the per-key duration) -> TERMINATED.  State is computed lazily on access.

Fault injection: :meth:`JobsEmulator.set_faults` answers a random fraction of API
requests with 429/503 + ``Retry-After`` and drops another fraction of connections
without an answer -- for POSTs either *before* applying the request (request lost)
or *after* (response lost); :meth:`JobsEmulator.inject_fault` scripts exact faults.
SDK behaviour to keep in mind: it retries 429/503 after ``int(Retry-After)`` seconds
plus a random 0-1 s jitter (a fractional header value falls back to 1 s, so the
emulator sends whole seconds), and retries *every* dropped connection -- POSTs
included -- after ``min(10, attempt)`` s + jitter, so a ``run-now`` whose response
was lost is sent again; only an ``idempotency_token`` prevents a duplicate run.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlsplit

from databricks_bundle_decorators.testing._emulator_state import (
    ApiError,
    JobsModel,
    JsonDict,
    Outcome,
    RunRecord,
    invalid,
)

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = ["FaultKind", "JobsEmulator", "RunRecord"]

FaultKind = Literal["error", "drop_before", "drop_after"]
_API_PREFIXES = ("/api/2.2/jobs/", "/api/2.1/jobs/")
_ERROR_CODES = {
    429: ("REQUEST_LIMIT_EXCEEDED", "Too many requests. Please wait a moment and try again."),
    500: ("INTERNAL_ERROR", "Internal error (emulated fault)."),
    503: ("TEMPORARILY_UNAVAILABLE", "The service is temporarily unavailable (emulated)."),
}


@dataclass
class _Reply:
    status: int
    body: JsonDict
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class _ScriptedFault:
    path: str
    kind: FaultKind
    status: int
    job_id: int | None
    remaining: int


@dataclass(frozen=True)
class _FaultConfig:
    error_rate: float = 0.0
    drop_rate: float = 0.0
    retry_after: float = 0.0
    statuses: tuple[int, ...] = (429, 503)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, emulator: JobsEmulator) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.emulator = emulator


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real service
    disable_nagle_algorithm = True  # else Nagle + delayed ACK add ~40 ms per request
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.emulator._track(self.connection, opened=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.emulator._track(self.connection, opened=False)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        reply = self.server.emulator._dispatch(
            self.command, self.path, self.headers.get("Authorization"), body
        )
        if reply is None:  # dropped: close the socket without answering
            self.close_connection = True
            return
        payload = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class JobsEmulator:
    """An in-process Databricks Jobs API server; use as a context manager.

    ``requests`` counts every received request per path (query string excluded) plus
    ``"total"``; ``faults`` counts injected faults per kind (``"429"``, ``"503"``,
    ``"drop_before"``, ``"drop_after"``, ``"total"``) and per ``"<kind> <path>"``.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        workspace_id: str = "1234567890123456",
        user_name: str = "emulator@example.com",
        outcome_parameter: str = "backfill_key",
    ) -> None:
        """``token``: if set, API requests must carry ``Authorization: Bearer <token>``."""
        self.token = token
        self.workspace_id = workspace_id
        self.requests: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.request_log: deque[tuple[str, str]] = deque(maxlen=10_000)
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._fault_config = _FaultConfig()
        self._rng = random.Random(0)
        self._scripted: list[_ScriptedFault] = []
        self.url = ""
        self._model = JobsModel(base_url="", workspace_id=workspace_id, user_name=user_name)
        self._model.outcome_parameter = outcome_parameter

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> JobsEmulator:
        if self._server is not None:
            raise RuntimeError("JobsEmulator already started")
        self._server = _Server(self)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self._model.base_url = self.url
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"JobsEmulator:{port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # unblock keep-alive handler threads
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> JobsEmulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def workspace_client(self, **config: Any) -> WorkspaceClient:
        """A real ``WorkspaceClient`` for this emulator (PAT auth, no ~/.databrickscfg).

        Extra keyword arguments go to ``databricks.sdk.config.Config`` (for example
        ``retry_timeout_seconds=5``).
        """
        from databricks.sdk import WorkspaceClient
        from databricks.sdk.config import Config

        if not self.url:
            raise RuntimeError("start the emulator first")
        cfg = Config(host=self.url, token=self.token or "dapi-test", auth_type="pat", **config)
        return WorkspaceClient(config=cfg)

    # -- configuration ---------------------------------------------------------------

    @property
    def default_duration(self) -> float:
        """Seconds a run stays RUNNING when no outcome for its key says otherwise."""
        return self._model.default_duration

    @default_duration.setter
    def default_duration(self, seconds: float) -> None:
        with self._lock:
            self._model.default_duration = float(seconds)

    @property
    def pending_duration(self) -> float:
        """Seconds a run stays PENDING after getting a concurrency slot (default 0)."""
        return self._model.pending_duration

    @pending_duration.setter
    def pending_duration(self, seconds: float) -> None:
        with self._lock:
            self._model.pending_duration = float(seconds)

    def create_job(
        self,
        name: str,
        *,
        parameters: Mapping[str, str] | None = None,
        max_concurrent_runs: int = 1,
        queue: bool = True,
        tags: Mapping[str, str] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> int:
        """Create a job and return its id.

        ``parameters`` are job parameter defaults.  ``settings`` is raw JobSettings
        JSON merged last, so it wins over the keyword arguments.
        """
        body: JsonDict = {
            "name": name,
            "max_concurrent_runs": max_concurrent_runs,
            "queue": {"enabled": queue},
        }
        if parameters:
            body["parameters"] = [{"name": k, "default": v} for k, v in parameters.items()]
        if tags:
            body["tags"] = dict(tags)
        body.update(settings or {})
        with self._lock:
            try:
                return self._model.create_job(body, time.monotonic())
            except ApiError as err:
                raise ValueError(err.message) from None

    def set_outcome(
        self,
        key: str,
        *,
        job_id: int | None = None,
        duration: float | None = None,
        fail_attempts: int = 0,
        result: str = "SUCCESS",
        message: str = "",
    ) -> None:
        """Script runs whose ``backfill_key`` job parameter equals ``key``.

        ``duration``: seconds RUNNING (default ``default_duration``); the first
        ``fail_attempts`` executions end FAILED, later ones end with ``result``
        (SUCCESS, FAILED, TIMEDOUT, CANCELED, SUCCESS_WITH_FAILURES or
        INTERNAL_ERROR) and ``message`` as ``state_message``.  Attempts are counted
        per job; ``job_id`` restricts the outcome to one job.
        """
        with self._lock:
            self._model.set_outcome(key, job_id, Outcome(duration, fail_attempts, result, message))

    def set_faults(
        self,
        *,
        error_rate: float = 0.0,
        drop_rate: float = 0.0,
        retry_after: float = 0.0,
        statuses: tuple[int, ...] = (429, 503),
        seed: int = 0,
    ) -> None:
        """Randomly fail API requests (``/api/...`` only; all zero = no faults).

        ``error_rate`` of requests are answered with a status from ``statuses`` (429
        and 503 carry ``Retry-After: int(retry_after)``; nothing is applied).
        ``drop_rate`` of connections are closed without an answer; a dropped POST is
        lost before or after being applied with equal probability.
        """
        if not (0 <= error_rate <= 1 and 0 <= drop_rate <= 1 and error_rate + drop_rate <= 1):
            raise ValueError("error_rate and drop_rate must be in [0, 1] and sum to <= 1")
        if error_rate and (not statuses or any(s < 400 or s > 599 for s in statuses)):
            raise ValueError("statuses must be HTTP error codes")
        with self._lock:
            self._fault_config = _FaultConfig(error_rate, drop_rate, retry_after, statuses)
            self._rng = random.Random(seed)

    def inject_fault(
        self,
        path: str,
        *,
        kind: FaultKind = "error",
        status: int = 503,
        job_id: int | None = None,
        count: int = 1,
    ) -> None:
        """Fail the next ``count`` requests to ``path`` (optionally only for ``job_id``).

        Scripted faults take precedence over :meth:`set_faults`; ``kind="error"``
        answers ``status``, ``"drop_before"``/``"drop_after"`` close the connection
        before/after the request has been applied.
        """
        with self._lock:
            self._scripted.append(_ScriptedFault(path, kind, status, job_id, count))

    # -- inspection ------------------------------------------------------------------

    def runs(self, job_id: int | None = None) -> list[RunRecord]:
        """Snapshots of all runs (of one job), oldest first, with states as of now."""
        with self._lock:
            self._model.advance(time.monotonic())
            return self._model.snapshot_runs(job_id)

    def timeline(self, job_id: int | None = None) -> list[tuple[float, float, int]]:
        """``(start, end, run_id)`` RUNNING intervals (monotonic seconds), by start.

        A run still RUNNING ends "now".
        """
        now = time.monotonic()
        return sorted(
            (r.started, r.ended if r.ended is not None else now, r.run_id)
            for r in self.runs(job_id)
            if r.started is not None and r.started <= now
        )

    def max_concurrency(self, job_id: int) -> int:
        """The largest number of simultaneously RUNNING runs of the job so far."""
        events: list[tuple[float, int]] = []
        for start, end, _ in self.timeline(job_id):
            events += [(start, 1), (end, -1)]
        events.sort()  # at equal times, -1 sorts first: back-to-back runs don't overlap
        current = peak = 0
        for _, delta in events:
            current += delta
            peak = max(peak, current)
        return peak

    def wait_until_idle(self, timeout: float = 10.0) -> None:
        """Sleep until no run is active any more (raises ``TimeoutError``)."""
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            with self._lock:
                self._model.advance(now)
                upcoming = self._model.next_event()
            if upcoming is None:
                return
            if now >= deadline:
                raise TimeoutError(f"runs still active after {timeout} s")
            time.sleep(min(max(upcoming - now, 0.001), 0.05, max(deadline - now, 0.001)))

    # -- HTTP plumbing ---------------------------------------------------------------

    def _track(self, conn: socket.socket, *, opened: bool) -> None:
        with self._lock:
            if opened:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _dispatch(
        self, method: str, raw_path: str, authorization: str | None, raw_body: bytes
    ) -> _Reply | None:
        split = urlsplit(raw_path)
        path = split.path
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        body: object = None
        if raw_body:
            try:
                body = json.loads(raw_body)
            except ValueError:
                body = None
        job_hint = (body if isinstance(body, dict) else query).get("job_id")
        with self._lock:
            self.requests[path] += 1
            self.requests["total"] += 1
            self.request_log.append((method, raw_path))
            fault = self._pick_fault(method, path, job_hint) if path.startswith("/api/") else None
        if fault is not None and fault[0] == "error":
            status = fault[1]
            code, message = _ERROR_CODES.get(status, ("TEMPORARILY_UNAVAILABLE", "Emulated."))
            extra: tuple[tuple[str, str], ...] = ()
            if status in (429, 503):
                extra = (("Retry-After", str(int(self._fault_config.retry_after))),)
            return _Reply(status, {"error_code": code, "message": message}, extra)
        if fault is not None and fault[0] == "drop_before":
            return None
        try:
            reply = self._route(method, path, query, raw_body, body, authorization)
        except ApiError as err:
            reply = _Reply(err.status, err.body())
        except Exception as err:  # a bug in the emulator: report it, don't hang the client
            reply = _Reply(500, {"error_code": "INTERNAL_ERROR", "message": repr(err)})
        return None if fault is not None else reply  # "drop_after": applied, answer lost

    def _pick_fault(self, method: str, path: str, job_hint: object) -> tuple[FaultKind, int] | None:
        """Choose (kind, status) for this request; the caller holds the lock."""
        chosen: tuple[FaultKind, int] | None = None
        for scripted in self._scripted:
            if scripted.path == path and scripted.job_id in (None, _as_int(job_hint)):
                scripted.remaining -= 1
                if scripted.remaining <= 0:
                    self._scripted.remove(scripted)
                chosen = (scripted.kind, scripted.status)
                break
        cfg = self._fault_config
        if chosen is None and (cfg.error_rate or cfg.drop_rate):
            roll = self._rng.random()
            if roll < cfg.drop_rate:
                after = method == "POST" and self._rng.random() < 0.5
                chosen = ("drop_after" if after else "drop_before", 0)
            elif roll < cfg.drop_rate + cfg.error_rate:
                chosen = ("error", self._rng.choice(cfg.statuses))
        if chosen is not None:
            label = str(chosen[1]) if chosen[0] == "error" else chosen[0]
            self.faults[label] += 1
            self.faults[f"{label} {path}"] += 1
            self.faults["total"] += 1
        return chosen

    def _route(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        raw_body: bytes,
        body: object,
        authorization: str | None,
    ) -> _Reply:
        if path == "/.well-known/databricks-config" and method == "GET":
            return _Reply(
                200, {"oidc_endpoint": f"{self.url}/oidc", "workspace_id": self.workspace_id}
            )
        endpoint = next((path[len(p) :] for p in _API_PREFIXES if path.startswith(p)), None)
        if endpoint is None or (method, endpoint) not in _ENDPOINTS:
            return _Reply(
                404,
                {
                    "error_code": "ENDPOINT_NOT_FOUND",
                    "message": f"No API found for '{method} {path}'",
                },
            )
        if self.token is not None and authorization != f"Bearer {self.token}":
            return _Reply(
                401, {"error_code": "UNAUTHENTICATED", "message": "Invalid access token."}
            )
        if method == "POST":
            if raw_body and not isinstance(body, dict):
                raise ApiError(
                    400, "MALFORMED_REQUEST", "Invalid JSON given in the body of the request"
                )
            params: Mapping[str, Any] = body if isinstance(body, dict) else {}
        else:
            params = query
        model, now = self._model, time.monotonic()
        with self._lock:
            if endpoint == "create":
                return _Reply(200, {"job_id": model.create_job(params, now)})
            if endpoint == "get":
                return _Reply(200, model.get_job(_req_int(params, "job_id")))
            if endpoint == "list":
                return _Reply(
                    200,
                    model.list_jobs(
                        name=params.get("name"),
                        limit=_opt_int(params, "limit"),
                        offset=_opt_int(params, "offset"),
                        page_token=params.get("page_token") or None,
                        expand_tasks=_opt_bool(params, "expand_tasks"),
                    ),
                )
            if endpoint == "run-now":
                return _Reply(200, model.run_now(params, now))
            if endpoint == "runs/get":
                return _Reply(200, model.get_run(_req_int(params, "run_id"), now))
            if endpoint == "runs/cancel":
                return _Reply(200, model.cancel_run(_req_int(params, "run_id"), now))
            if endpoint == "runs/cancel-all":
                return _Reply(
                    200,
                    model.cancel_all(
                        _opt_int(params, "job_id"), _opt_bool(params, "all_queued_runs"), now
                    ),
                )
            return _Reply(
                200,
                model.list_runs(
                    job_id=_opt_int(params, "job_id"),
                    active_only=_opt_bool(params, "active_only"),
                    completed_only=_opt_bool(params, "completed_only"),
                    limit=_opt_int(params, "limit"),
                    offset=_opt_int(params, "offset"),
                    page_token=params.get("page_token") or None,
                    start_time_from=_opt_int(params, "start_time_from"),
                    start_time_to=_opt_int(params, "start_time_to"),
                    run_type=params.get("run_type"),
                    expand_tasks=_opt_bool(params, "expand_tasks"),
                    now=now,
                ),
            )


_ENDPOINTS = frozenset(
    {
        ("POST", "create"),
        ("GET", "get"),
        ("GET", "list"),
        ("POST", "run-now"),
        ("GET", "runs/get"),
        ("GET", "runs/list"),
        ("POST", "runs/cancel"),
        ("POST", "runs/cancel-all"),
    }
)


def _as_int(value: object) -> int | None:
    try:
        return int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else None
    except ValueError:
        return None


def _opt_int(params: Mapping[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    number = _as_int(value)
    if number is None:
        raise invalid(f"Invalid value for {name}: {value!r}")
    return number


def _req_int(params: Mapping[str, Any], name: str) -> int:
    number = _opt_int(params, name)
    if number is None:
        raise invalid(f"Missing required field: {name}")
    return number


def _opt_bool(params: Mapping[str, Any], name: str) -> bool:
    value = params.get(name)
    if value is None or isinstance(value, bool):
        return bool(value)
    if value in ("true", "false"):
        return bool(value == "true")
    raise invalid(f"Invalid value for {name}: {value!r} (expected true or false)")
