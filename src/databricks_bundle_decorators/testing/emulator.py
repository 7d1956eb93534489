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

Endpoints (``/api/2.1`` is an alias of ``/api/2.2``): the SDK's host-metadata probe
``/.well-known/databricks-config``; ``jobs/`` ``list``, ``get``, ``create``, ``update``,
``reset``, ``run-now``, ``runs/get``, ``runs/get-output``, ``runs/list``, ``runs/cancel``,
``runs/cancel-all``; SCIM ``Me``, ``Users`` and ``ServicePrincipals``; job permissions;
OAuth M2M tokens; the Workspace API's files and folders; SQL statements on local Spark
(``emu.statements``). Errors use the ``{"error_code", "message"}`` body the SDK maps onto
its typed exceptions (an unknown job: 400 ``INVALID_PARAMETER_VALUE`` "Job N does not
exist.").

Runs follow real time (``time.monotonic``): QUEUED (waiting for one of the job's
``max_concurrent_runs`` slots) -> PENDING (``pending_duration``) -> RUNNING (the per-key
duration) -> TERMINATED. Epoch times come from a clock that :meth:`JobsEmulator.advance_days`
moves forward; runs are removed 60 days on, as the Jobs API reference says.

Faults: the SDK retries 429/503 after ``int(Retry-After)`` seconds plus a 0-1 s jitter (a
fractional header falls back to 1 s, so the emulator sends whole seconds) and retries
*every* dropped connection, POSTs included, so a ``run-now`` whose response was lost is
sent again: only an ``idempotency_token`` prevents a duplicate run.
"""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._endpoints._emulator_http import FaultConfig, FaultKind, HttpFrontEnd, ScriptedFault, _Server
from ._endpoints._emulator_permissions import (
    OAuthModel,
    PermissionControls,
    PermissionsModel,
)
from ._endpoints._emulator_processes import ExecutedTask, ProcessJobsModel
from ._endpoints._emulator_statements import StatementsModel
from ._endpoints._emulator_sync import SyncControls
from ._endpoints._emulator_workspace import WorkspaceModel
from ._store._emulator_records import RUNS_LIST_ORDERS
from ._store._emulator_state import ApiError, JsonDict, Outcome, RunRecord

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

__all__ = ["FaultKind", "JobsEmulator", "RunRecord"]


class JobsEmulator(HttpFrontEnd, SyncControls, PermissionControls):
    """An in-process Databricks Jobs API server; use as a context manager.

    ``requests`` counts every received request per path (query string excluded) plus
    ``"total"``; ``faults`` counts injected faults per kind (``"429"``, ``"503"``,
    ``"drop_before"``, ``"drop_after"``, ``"total"``) and per ``"<kind> <path>"``;
    ``fault_times`` when each was injected (``time.monotonic``).
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        workspace_id: str = "1234567890123456",
        user_name: str = "emulator@example.com",
        outcome_parameter: str = "backfill_key",
        port: int = 0,
    ) -> None:
        """``token``: if set, API requests must carry ``Authorization: Bearer <token>``;
        ``port``: the loopback port to listen on (0: a free one)."""
        self.port = port
        self.token = token
        self.workspace_id = workspace_id
        self.requests: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.fault_times: deque[float] = deque(maxlen=10_000)
        self.request_log: deque[tuple[str, str]] = deque(maxlen=10_000)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._fault_config = FaultConfig()
        self._rng = random.Random(0)
        self._scripted: list[ScriptedFault] = []
        self.url = ""
        self._model: ProcessJobsModel = ProcessJobsModel(
            self._changed, lambda: self.token, workspace_id, user_name
        )
        self._model.outcome_parameter = outcome_parameter
        clock = self._model.clock
        self._workspace = WorkspaceModel(lambda: clock.epoch_ms(time.monotonic()), user_name)
        self.statements = StatementsModel()  # SQL warehouses and system.billing: see its module
        self._permissions = PermissionsModel()  # job ACLs, the caller's groups: see its module
        self._oauth = OAuthModel()  # service principals' OAuth M2M tokens: see its module

    def start(self) -> JobsEmulator:
        if self._server is not None:
            raise RuntimeError("JobsEmulator already started")
        self._server = _Server(self, self.port)
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
        self.unblock_submissions()  # no handler thread stays parked at the gate
        self.release_requests()  # nor at the hold
        self._model.processes.stop()  # a controller run's process
        self._model.tasks.stop()
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

    def __exit__(self, *exc_info: object) -> None:
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

    @property
    def runs_list_order(self) -> str:
        """How ``runs/list`` orders runs: newest first by ``"start_time"`` (the default) or
        ``"end_time"`` (a run not finished by its start), both documented; or
        ``"unordered"``, arbitrary but stable from page to page. Never by run id."""
        return self._model.runs_list_order

    @runs_list_order.setter
    def runs_list_order(self, order: str) -> None:
        if order not in RUNS_LIST_ORDERS:
            raise ValueError(f"runs_list_order must be one of {RUNS_LIST_ORDERS}, got {order!r}")
        with self._lock:
            self._model.runs_list_order = order

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
        hold: bool = False,
    ) -> None:
        """Script runs whose ``backfill_key`` job parameter equals ``key``.

        ``duration``: seconds RUNNING (default ``default_duration``); the first
        ``fail_attempts`` executions end FAILED, later ones end with ``result``
        (SUCCESS, FAILED, TIMEDOUT, CANCELED, SUCCESS_WITH_FAILURES or
        INTERNAL_ERROR) and ``message`` as ``state_message``.  Attempts are counted
        per job; ``job_id`` restricts the outcome to one job.  ``hold``: the runs stay
        RUNNING until :meth:`release` (``duration`` counts from nothing then).
        """
        outcome = Outcome(duration, fail_attempts, result, message, hold)
        with self._lock:
            self._model.set_outcome(key, job_id, outcome)

    def set_task_logs(self, task_run_id: int, text: str) -> None:
        """Answer ``text`` as the ``logs`` of task run ``task_run_id`` in ``runs/get-output``.

        What Databricks keeps of a wheel or Python task's stdout; a stand-in for the code
        the emulator does not run.  The task run ids of a run are ``RunRecord.task_run_ids``
        (in the order of the job's tasks); a for-each task's iterations are task runs too,
        ``RunRecord.iterations[<its task run id>]``.

        Raises:
            KeyError: no run has this id.
            ValueError: the id is a job run's, not one of its task runs'.
        """
        with self._lock:
            self._model.set_task_logs(task_run_id, text)

    def set_notebook_result(self, task_run_id: int, text: str) -> None:
        """Like :meth:`set_task_logs`, for ``notebook_output.result`` of a notebook task run:
        the value the notebook gave ``dbutils.notebook.exit()``."""
        with self._lock:
            self._model.set_notebook_result(task_run_id, text)

    def execute_tasks(self, job_id: int) -> None:
        """Execute the tasks of job ``job_id``'s runs from now on, in this process, as
        Databricks would: notebook tasks through the generated notebook, ``dbxdec-run``
        wheel tasks through its entry, their outputs kept as ``runs/get-output`` answers
        them (see ``_emulator_processes``). The test sets the environment the tasks need."""
        self._model.tasks.execute(job_id)

    def executed_tasks(self) -> list[ExecutedTask]:
        """Every task run :meth:`execute_tasks` executed so far, with its stdout and error."""
        return self._model.tasks.executed()

    def runs(self, job_id: int | None = None) -> list[RunRecord]:
        """Snapshots of all runs (of one job) the service keeps, oldest first, with states
        as of now (runs removed after 60 days are gone: see :meth:`advance_days`)."""
        with self._lock:
            self._model.advance(time.monotonic())
            return self._model.snapshot_runs(job_id)

    def run_now_bodies(self, job_id: int | None = None) -> list[JsonDict]:
        """Every ``run-now`` request body received (of one job), in order, as sent
        (``job_parameters``, ``idempotency_token``, ``only``, ``queue``...)."""
        with self._lock:
            bodies = list(self._model.run_now_bodies)
        return [b for b in bodies if job_id is None or b.get("job_id") == job_id]

    def launch_bodies(self, job_id: int | None = None) -> list[JsonDict]:
        """:meth:`run_now_bodies` with one body per ``idempotency_token`` (its first): a
        client may send a slow ``run-now`` again with the same token (dbxdec's launcher
        does), and the workspace starts one run for them, so this counts what was meant
        to start, however loaded the machine. Bodies without a token all count."""
        seen: set[str] = set()
        firsts = []
        for body in self.run_now_bodies(job_id):
            token = body.get("idempotency_token")
            if isinstance(token, str):
                if token in seen:
                    continue
                seen.add(token)
            firsts.append(body)
        return firsts

    def job_change_bodies(self, job_id: int | None = None) -> list[tuple[str, JsonDict]]:
        """Every ``jobs/create``, ``jobs/update`` and ``jobs/reset`` request received (of one
        job), in order: ``(endpoint, body as sent)`` (a create's body gets its ``job_id``).
        What a request wrote that ``jobs/get`` does not return (a table-update trigger's
        ``condition``) is seen here."""
        with self._lock:
            bodies = list(self._model.job_change_bodies)
        return [(e, b) for e, b in bodies if job_id is None or b.get("job_id") == job_id]

    def job_settings(self, job_id: int) -> JsonDict:
        """A copy of job ``job_id``'s settings as ``jobs/get`` returns them."""
        with self._lock:
            try:
                return dict(self._model.get_job(job_id)["settings"])
            except ApiError as err:
                raise KeyError(err.message) from None

    def workspace_files(self, under: str = "/") -> dict[str, bytes]:
        """The workspace's files and notebooks under the folder ``under``: path -> content."""
        with self._lock:
            return self._workspace.files(under)

    def put_workspace_file(self, path: str, content: bytes) -> None:
        """Write a workspace file (creating its folders) as if someone had imported it."""
        with self._lock:
            self._workspace.put(path, content)

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
        """Block until no run is active any more (raises ``TimeoutError``)."""
        self.wait_for(
            lambda runs: not any(r.active for r in runs), timeout=timeout, what="no active run"
        )
