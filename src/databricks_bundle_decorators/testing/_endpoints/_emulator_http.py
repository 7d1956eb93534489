"""The HTTP front end of :class:`~..emulator.JobsEmulator`: server, routing, faults.

Requests are parsed here, faults are injected here, and everything else is handed to
the in-memory :class:`~.._store._emulator_state.JobsModel` (Jobs API) or
:class:`~._emulator_workspace.WorkspaceModel` (Workspace API).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .._store._emulator_state import ApiError, JobsModel, JsonDict, invalid
from ._emulator_faults import FaultControls, as_int
from ._emulator_oauth import OAuthModel, route_oauth
from ._emulator_permissions import GUARDED, PermissionsModel, route_identity
from ._emulator_statements import STATEMENTS_PREFIX, StatementsModel
from ._emulator_workspace import ENDPOINTS as WORKSPACE_ENDPOINTS
from ._emulator_workspace import WORKSPACE_PREFIX, WorkspaceModel, parse_form

_API_PREFIXES = ("/api/2.2/jobs/", "/api/2.1/jobs/")
_ERROR_CODES = {
    429: ("REQUEST_LIMIT_EXCEEDED", "Too many requests. Please wait a moment and try again."),
    400: ("INVALID_PARAMETER_VALUE", "Invalid parameter value (emulated fault)."),
    403: ("PERMISSION_DENIED", "Permission denied (emulated fault)."),
    500: ("INTERNAL_ERROR", "Internal error (emulated fault)."),
    503: ("TEMPORARILY_UNAVAILABLE", "The service is temporarily unavailable (emulated)."),
}

RUN_NOW = tuple(f"{p}run-now" for p in _API_PREFIXES)


@dataclass
class _Reply:
    status: int
    body: JsonDict | bytes  # bytes: a raw answer (a workspace file's content)
    headers: tuple[tuple[str, str], ...] = ()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, emulator: HttpFrontEnd) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.emulator = emulator

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client goes away mid-request (a killed launcher)."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


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
            self.command,
            self.path,
            self.headers.get("Authorization"),
            body,
            self.headers.get("Content-Type"),
            self.headers.get("User-Agent") or "",
        )
        if reply is None:  # dropped: close the socket without answering
            self.close_connection = True
            return
        raw = isinstance(reply.body, bytes)
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/octet-stream" if raw else "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class HttpFrontEnd(FaultControls):
    """Request dispatch, fault injection (:mod:`._emulator_faults`) and routing; mixed into
    ``JobsEmulator``."""

    token: str | None
    workspace_id: str
    url: str
    requests: Counter[str]
    request_log: deque[tuple[str, str]]
    _lock: threading.Lock
    _changed: threading.Condition  # on _lock; notified whenever the state may have changed
    _wait_at_gates: Callable[[str, str, object], None]
    _connections: set[socket.socket]
    _model: JobsModel
    _workspace: WorkspaceModel
    _permissions: PermissionsModel
    _oauth: OAuthModel
    statements: StatementsModel

    def _track(self, conn: socket.socket, *, opened: bool) -> None:
        with self._lock:
            if opened:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _dispatch(
        self,
        method: str,
        raw_path: str,
        authorization: str | None,
        raw_body: bytes,
        content_type: str | None = None,
        user_agent: str = "",
    ) -> _Reply | None:
        split = urlsplit(raw_path)
        path = split.path
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        body: object = None
        if raw_body and (content_type or "").startswith("multipart/form-data"):
            body = parse_form(content_type or "", raw_body)  # workspace.upload
        elif raw_body:
            try:
                body = json.loads(raw_body)
            except ValueError:
                body = None
        job_hint = (body if isinstance(body, dict) else query).get("job_id")
        with self._lock:
            self.requests[path] += 1
            self.requests["total"] += 1
            self.request_log.append((method, raw_path))
            api = path.startswith("/api/")
            fault = self._pick_fault(method, path, job_hint, user_agent) if api else None
        if fault is not None and fault[0] == "error":
            status = fault[1]
            code, message = _ERROR_CODES.get(status, ("TEMPORARILY_UNAVAILABLE", "Emulated."))
            extra: tuple[tuple[str, str], ...] = ()
            if status in (429, 503):
                extra = (("Retry-After", str(int(self._fault_config.retry_after))),)
            return _Reply(status, {"error_code": code, "message": message}, extra)
        if fault is not None and fault[0] == "drop_before":
            return None
        self._wait_at_gates(method, path, body)  # the tests' holds: see _emulator_sync
        try:
            reply = self._route(method, path, query, raw_body, body, authorization)
        except ApiError as err:
            reply = _Reply(err.status, err.body())
        except Exception as err:  # a bug in the emulator: report it, don't hang the client
            reply = _Reply(500, {"error_code": "INTERNAL_ERROR", "message": repr(err)})
        with self._lock:
            self._changed.notify_all()
        return None if fault is not None else reply  # "drop_after": applied, answer lost

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
        with self._lock:  # OIDC discovery and tokens need no bearer token: _emulator_oauth
            oauth = route_oauth(self._oauth, method, path, raw_body, authorization, self.url)
            principal = self._oauth.caller(authorization)  # a service principal's token
            if principal is not None and path.startswith("/api/"):
                self._oauth.calls.append((principal.application_id, method, path))
        if oauth is not None:
            return _Reply(*oauth)
        pat = self.token is None or authorization == f"Bearer {self.token}"
        authorized = pat or principal is not None
        as_principal = (principal.application_id, principal.display_name) if principal else None
        with self._lock:  # SCIM Me (asked before any token check, as before) and job ACLs
            identity = route_identity(
                self._permissions, self._model, method, path, authorized, as_principal, query
            )
        if identity is not None:
            return _Reply(200, identity)
        if path.startswith(STATEMENTS_PREFIX):  # its own lock: a statement runs on Spark
            return _Reply(*self.statements.handle(method, path, body, authorized=authorized))
        workspace = path.startswith(WORKSPACE_PREFIX)
        endpoint = (
            path[len(WORKSPACE_PREFIX) :]
            if workspace
            else next((path[len(p) :] for p in _API_PREFIXES if path.startswith(p)), None)
        )
        known = WORKSPACE_ENDPOINTS if workspace else _ENDPOINTS
        if endpoint is None or (method, endpoint) not in known:
            return _Reply(
                404,
                {
                    "error_code": "ENDPOINT_NOT_FOUND",
                    "message": f"No API found for '{method} {path}'",
                },
            )
        if not authorized:
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
        if workspace:
            with self._lock:
                return _Reply(200, self._workspace.handle(method, endpoint, params))
        model, now = self._model, time.monotonic()
        caller = as_principal[0] if as_principal else model.user_name
        with self._lock:
            if endpoint in GUARDED:  # the job ACL table, when a test set one: see its module
                job_id = (
                    model.job_of_run(_req_int(params, "run_id"))
                    if endpoint == "runs/cancel"
                    else _opt_int(params, "job_id")
                )
                if job_id is not None:
                    self._permissions.require(endpoint, job_id, caller, model.user_name)
            if endpoint == "create":
                return _Reply(200, {"job_id": model.create_job(params, now)})
            if endpoint in ("update", "reset"):
                return _Reply(200, model.change_job(params, now, reset=endpoint == "reset"))
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
                run_id, token = _req_int(params, "run_id"), params.get("page_token") or None
                return _Reply(200, model.get_run(run_id, now, token))
            if endpoint == "runs/get-output":
                return _Reply(200, model.get_run_output(_req_int(params, "run_id"), now))
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
        ("POST", "update"),
        ("POST", "reset"),
        ("GET", "get"),
        ("GET", "list"),
        ("POST", "run-now"),
        ("GET", "runs/get"),
        ("GET", "runs/get-output"),
        ("GET", "runs/list"),
        ("POST", "runs/cancel"),
        ("POST", "runs/cancel-all"),
    }
)


def _opt_int(params: Mapping[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    number = as_int(value)
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
