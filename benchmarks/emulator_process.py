"""The Jobs API emulator in a process of its own, for the launcher benchmarks.

The emulator's HTTP threads would otherwise share the launcher's interpreter (and its
GIL), so the figures would measure both. ``emulated_job`` starts the process, creates a
job with the backfill parameters and yields what a benchmark needs: a
``WorkspaceClient`` on it, a way to start counting (and to turn faults on) and the
figures at the end.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice, slice_parameters
from databricks_bundle_decorators.testing import JobsEmulator


@dataclass(frozen=True)
class Figures:
    """What the emulator saw of one job since ``start``."""

    busy: float  # RUNNING seconds of all runs
    requests: int  # API requests (``/api/...``)
    runs: int
    peak: int  # the most runs RUNNING at once
    created: tuple[float, ...] = ()  # each run's creation (its run-now), time.monotonic()
    span: tuple[float, float] = (0.0, 0.0)  # first run started, last run ended (monotonic)


def _serve(conn: Connection, duration: float, error_rate: float, order: str) -> None:
    """The emulator process: answers commands sent over ``conn`` until ``stop``."""
    with JobsEmulator() as emu:
        emu.default_duration = duration
        emu.runs_list_order = order
        conn.send(emu.url)
        while True:
            command, *args = conn.recv()
            if command == "create_job":
                conn.send(emu.create_job(*args[:1], **args[1]))
            elif command == "start":
                emu.requests.clear()
                if error_rate:
                    emu.set_faults(error_rate=error_rate, seed=17)
                conn.send(None)
            elif command == "figures":
                emu.set_faults()
                timeline = emu.timeline(args[0])
                busy = sum(end - start for start, end, _ in timeline)
                api = sum(n for path, n in emu.requests.items() if path.startswith("/api/"))
                created = tuple(sorted(r.created for r in emu.runs(args[0])))
                # CLOCK_MONOTONIC is one clock for every process of the machine: the
                # caller may compare these instants with its own time.monotonic()
                span = (timeline[0][0], max(end for _, end, _ in timeline)) if timeline else (0, 0)
                peak = emu.max_concurrency(args[0])
                conn.send(Figures(busy, api, len(timeline), peak, created, span))
            elif command == "stop":
                conn.send(None)
                return


class EmulatedJob:
    """A job in the emulator process (see :func:`emulated_job`)."""

    def __init__(self, conn: Connection, url: str, job_id: int) -> None:
        from databricks.sdk import WorkspaceClient
        from databricks.sdk.config import Config

        self._conn = conn
        self.job_id = job_id
        self.client = WorkspaceClient(config=Config(host=url, token="dapi-bench", auth_type="pat"))

    def start(self) -> None:
        """Count requests from now on (and answer the fraction asked for with faults)."""
        _call(self._conn, "start")

    def figures(self) -> Figures:
        """What the emulator saw since :meth:`start` (faults stop)."""
        found: Figures = _call(self._conn, "figures", self.job_id)
        return found


@contextmanager
def emulated_job(
    duration: float, *, max_concurrent_runs: int, error_rate: float = 0.0, order: str = "start_time"
) -> Iterator[EmulatedJob]:
    """A job ``bench`` with the backfill parameters, whose runs last ``duration`` s, in an
    emulator listing ``runs/list`` in ``order`` (``JobsEmulator.runs_list_order``)."""
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe()
    server = ctx.Process(target=_serve, args=(theirs, duration, error_rate, order), daemon=True)
    server.start()
    try:
        url = ours.recv()
        settings = {
            "parameters": slice_parameters((), exact=False, params={}),
            "max_concurrent_runs": max_concurrent_runs,
        }
        yield EmulatedJob(ours, url, _call(ours, "create_job", "bench", settings))
        _call(ours, "stop")
    finally:
        server.join(timeout=5)
        if server.is_alive():
            server.terminate()


def key_plan(keys: int) -> BackfillPlan:
    """A plan of ``keys`` one-key runs of job ``bench``."""
    names = [f"key-{i:05d}" for i in range(keys)]
    return BackfillPlan("bench", tuple(Slice(i, (k,)) for i, k in enumerate(names)))


def _call(conn: Connection, *message: Any) -> Any:
    conn.send(message)
    return conn.recv()
