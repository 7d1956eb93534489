"""The HTTP front end of :class:`~..emulator.JobsEmulator`: server, routing and faults.

A fault may be limited to clients whose ``User-Agent`` contains a string: the SDK adds
``upstream/<name>`` when ``DATABRICKS_SDK_UPSTREAM`` is set (databricks-sdk
``useragent._get_upstream_user_agent_info``), so a test can cut off one process only.
"""

from __future__ import annotations

import json
import random
import re
import socket
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from .._store._emulator_records import as_int, opt_bool, opt_int, req_int
from .._store._emulator_state import ApiError, JobsModel, JsonDict
from ._emulator_permissions import (
    GUARDED,
    OAuthModel,
    PermissionsModel,
    route_identity,
    route_oauth,
)
from ._emulator_statements import STATEMENTS_PREFIX, StatementsModel
from ._emulator_workspace import ENDPOINTS as WORKSPACE_ENDPOINTS
from ._emulator_workspace import WORKSPACE_PREFIX, WorkspaceModel, parse_form

FaultKind = Literal["error", "drop_before", "drop_after"]

_API_PREFIXES = ("/api/2.2/jobs/", "/api/2.1/jobs/")
_ERROR_CODES = {
    429: ("REQUEST_LIMIT_EXCEEDED", "Too many requests. Please wait a moment and try again."),
    400: ("INVALID_PARAMETER_VALUE", "Invalid parameter value (emulated fault)."),
    403: ("PERMISSION_DENIED", "Permission denied (emulated fault)."),
    500: ("INTERNAL_ERROR", "Internal error (emulated fault)."),
    503: ("TEMPORARILY_UNAVAILABLE", "The service is temporarily unavailable (emulated)."),
}

RUN_NOW = tuple(f"{p}run-now" for p in _API_PREFIXES)
RUN_PAGE = re.compile(r"/jobs/(\d+)/runs/(\d+)")
"""A run's page in the workspace UI, ``<host>/jobs/<job id>/runs/<run id>`` (the path
``launch.status.status_grid.run_page_url`` links). The Jobs API gives each run the URL of
"the detail page of the run" (``run_page_url``,
https://docs.databricks.com/api/workspace/jobs/getrun) and says nothing of the page itself:
the emulator's shows only what ``runs/get`` answers, so a test can see which run a link
opened."""
HTML = "text/html; charset=utf-8"


_FRAGMENT_ROUTER = (
    "<p>Opening the page this link names.</p><script>"
    "var m = /^#job\\/(\\d+)\\/run\\/(\\d+)/.exec(location.hash);"
    'if (m) { location.replace("/jobs/" + m[1] + "/runs/" + m[2]); }'
    "</script>"
)
"""The workspace's home page ``/?o=<workspace id>``, where a run's ``run_page_url``
(``/?o=<id>#job/<job>/run/<run>``) leads: the fragment never reaches the server, so the
page's script opens the run's page, as the workspace UI routes such links."""


def _page(status: int, title: str, body: str) -> _Reply:
    """An HTML page of the workspace's UI (``body`` is HTML, ``title`` text)."""
    page = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title></head><body>{body}</body></html>"
    )
    return _Reply(status, page.encode(), (), HTML)


@dataclass
class ScriptedFault:
    path: str
    kind: FaultKind
    status: int
    job_id: int | None
    remaining: int
    skip: int = 0  # matching requests still let through before the faults begin


@dataclass(frozen=True)
class FaultConfig:
    error_rate: float = 0.0
    drop_rate: float = 0.0
    retry_after: float = 0.0
    statuses: tuple[int, ...] = (429, 503)
    user_agent: str | None = None  # only clients whose User-Agent contains it


@dataclass
class _Reply:
    status: int
    body: JsonDict | bytes  # bytes: a raw answer (a workspace file's content)
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/octet-stream"  # of a raw answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, emulator: HttpFrontEnd, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
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
        self.send_header("Content-Type", reply.content_type if raw else "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    do_POST = do_GET


class HttpFrontEnd:
    """Request dispatch, fault injection and routing; mixed into ``JobsEmulator``."""

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
    faults: Counter[str]
    fault_times: deque[float]
    _fault_config: FaultConfig
    _rng: random.Random
    _scripted: list[ScriptedFault]

    def set_faults(
        self,
        *,
        error_rate: float = 0.0,
        drop_rate: float = 0.0,
        retry_after: float = 0.0,
        statuses: tuple[int, ...] = (429, 503),
        seed: int = 0,
        user_agent: str | None = None,
    ) -> None:
        """Randomly fail API requests (``/api/...`` only; all zero = no faults).

        ``error_rate`` of requests are answered with a status from ``statuses`` (429
        and 503 carry ``Retry-After: int(retry_after)``; nothing is applied).
        ``drop_rate`` of connections are closed without an answer; a dropped POST is
        lost before or after being applied with equal probability. ``user_agent``:
        only requests whose ``User-Agent`` header contains it (see the module docstring).
        """
        if not (0 <= error_rate <= 1 and 0 <= drop_rate <= 1 and error_rate + drop_rate <= 1):
            raise ValueError("error_rate and drop_rate must be in [0, 1] and sum to <= 1")
        if error_rate and (not statuses or any(s < 400 or s > 599 for s in statuses)):
            raise ValueError("statuses must be HTTP error codes")
        with self._lock:
            config = FaultConfig(error_rate, drop_rate, retry_after, statuses, user_agent)
            self._fault_config = config
            self._rng = random.Random(seed)

    def inject_fault(
        self,
        path: str,
        *,
        kind: FaultKind = "error",
        status: int = 503,
        job_id: int | None = None,
        count: int = 1,
        skip: int = 0,
    ) -> None:
        """Fail the next ``count`` requests to ``path`` (optionally only for ``job_id``),
        after letting ``skip`` of them through.

        Scripted faults take precedence over :meth:`set_faults`; ``kind="error"``
        answers ``status``, ``"drop_before"``/``"drop_after"`` close the connection
        before/after the request has been applied.
        """
        with self._lock:
            self._scripted.append(ScriptedFault(path, kind, status, job_id, count, skip))

    def _pick_fault(
        self, method: str, path: str, job_hint: object, user_agent: str
    ) -> tuple[FaultKind, int] | None:
        """Choose (kind, status) for this request; the caller holds the lock."""
        chosen: tuple[FaultKind, int] | None = None
        for scripted in self._scripted:
            if scripted.path == path and scripted.job_id in (None, as_int(job_hint)):
                if scripted.skip > 0:
                    scripted.skip -= 1
                    continue
                scripted.remaining -= 1
                if scripted.remaining <= 0:
                    self._scripted.remove(scripted)
                chosen = (scripted.kind, scripted.status)
                break
        cfg = self._fault_config
        hit = cfg.user_agent is None or cfg.user_agent in user_agent
        if chosen is None and (cfg.error_rate or cfg.drop_rate) and hit:
            roll = self._rng.random()
            if roll < cfg.drop_rate:
                after = method == "POST" and self._rng.random() < 0.5
                chosen = ("drop_after" if after else "drop_before", 0)
            elif roll < cfg.drop_rate + cfg.error_rate:
                chosen = ("error", self._rng.choice(cfg.statuses))
        if chosen is not None:
            label = str(chosen[1]) if chosen[0] == "error" else chosen[0]
            self.faults.update((label, f"{label} {path}", "total"))
            self.fault_times.append(time.monotonic())
            self._changed.notify_all()  # a dropped request applies nothing: wake waiters here
        return chosen

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

    def _run_page(self, job_id: int, run_id: int) -> _Reply:
        """The workspace's page of one job run, as a browser opens it from a link: the
        run's id, job, state and parameters (read-only; no bearer token, as a signed-in
        browser sends none)."""
        with self._lock:
            try:
                run = self._model.get_run(run_id, time.monotonic())
                job = self._model.get_job(job_id)
            except ApiError as err:
                return _page(404, "Not found", f"<p>{escape(err.message)}</p>")
        if run.get("job_id") != job_id:
            return _page(404, "Not found", f"<p>Run {run_id} is not a run of job {job_id}.</p>")
        state = run.get("state", {})
        name = str(job.get("settings", {}).get("name", job_id))
        rows = [
            ("Run", str(run_id)),
            ("Job", f"{name} ({job_id})"),
            ("Lifecycle", str(state.get("life_cycle_state", ""))),
            ("Result", str(state.get("result_state", "-"))),
            ("Message", str(state.get("state_message", ""))),
        ]
        rows += [(f"Parameter {p['name']}", str(p.get("value", ""))) for p in run["job_parameters"]]
        cells = (
            f'<tr><th>{escape(k)}</th><td id="{escape(k.lower().replace(" ", "-"))}">'
            f"{escape(v)}</td></tr>"
            for k, v in rows
        )
        title = f"Run {run_id} of {name}"
        return _page(200, title, f"<h1>{escape(title)}</h1><table>{''.join(cells)}</table>")

    def _route(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        raw_body: bytes,
        body: object,
        authorization: str | None,
    ) -> _Reply:
        page = RUN_PAGE.fullmatch(path)
        if page is not None and method == "GET":
            return self._run_page(int(page.group(1)), int(page.group(2)))
        if path == "/" and method == "GET" and query.get("o") == self.workspace_id:
            return _page(200, "Workspace", _FRAGMENT_ROUTER)
        if path == "/.well-known/databricks-config" and method == "GET":
            return _Reply(
                200, {"oidc_endpoint": f"{self.url}/oidc", "workspace_id": self.workspace_id}
            )
        with self._lock:  # OIDC discovery and tokens need no bearer token
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
            if not authorized:
                raise ApiError(401, "UNAUTHENTICATED", "Invalid access token.")
            return _Reply(200, self.statements.handle(method, path, body))
        workspace = path.startswith(WORKSPACE_PREFIX)
        endpoint = (
            path[len(WORKSPACE_PREFIX) :]
            if workspace
            else next((path[len(p) :] for p in _API_PREFIXES if path.startswith(p)), None)
        )
        known = WORKSPACE_ENDPOINTS if workspace else _JOBS_ENDPOINTS
        if endpoint is None or (method, endpoint) not in known:
            raise ApiError(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} {path}'")
        if not authorized:
            raise ApiError(401, "UNAUTHENTICATED", "Invalid access token.")
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
                    model.job_of_run(req_int(params, "run_id"))
                    if endpoint == "runs/cancel"
                    else opt_int(params, "job_id")
                )
                if job_id is not None:
                    self._permissions.require(endpoint, job_id, caller, model.user_name)
            return _Reply(200, _JOBS_ENDPOINTS[(method, endpoint)](model, params, now))


# the Jobs API endpoints served: (method, path after the prefix) -> the answer
_JobsEndpoint = Callable[[JobsModel, Mapping[str, Any], float], JsonDict]
_JOBS_ENDPOINTS: dict[tuple[str, str], _JobsEndpoint] = {
    ("POST", "create"): lambda m, p, now: {"job_id": m.create_job(p, now)},
    ("POST", "update"): lambda m, p, now: m.change_job(p, now, reset=False),
    ("POST", "reset"): lambda m, p, now: m.change_job(p, now, reset=True),
    ("GET", "get"): lambda m, p, now: m.get_job(req_int(p, "job_id")),
    ("GET", "list"): lambda m, p, now: m.list_jobs(p),
    ("POST", "run-now"): lambda m, p, now: m.run_now(p, now),
    ("GET", "runs/get"): lambda m, p, now: m.get_run(
        req_int(p, "run_id"), now, p.get("page_token") or None
    ),
    ("GET", "runs/get-output"): lambda m, p, now: m.get_run_output(req_int(p, "run_id"), now),
    ("GET", "runs/list"): lambda m, p, now: m.list_runs(p, now),
    ("POST", "runs/cancel"): lambda m, p, now: m.cancel_run(req_int(p, "run_id"), now),
    ("POST", "runs/cancel-all"): lambda m, p, now: m.cancel_all(
        opt_int(p, "job_id"), opt_bool(p, "all_queued_runs"), now
    ),
}
