"""Benchmark: how long ``dbxdec backfill`` takes to tell each environment failure.

Target (issue 13, item 7): every failure is told in ONE line within 30 s. For each case
the ``dbxdec`` console script runs as a subprocess (3 trials, the median is reported):

- before any run: a workspace answering 401 / 403 (a stub ``http.server`` with the
  Databricks error body), a closed port, a host name under ``.invalid``, a server that
  is not Databricks (HTML 404), a file where ``.dbxdec/backfills`` should be, a damaged
  ledger (``--resume``): seconds from the command's start to its ``Error:`` line on
  stderr, Python's start-up included;
- a disk filling up mid-backfill (``RLIMIT_FSIZE`` with SIGXFSZ ignored, so the ledger
  write fails with EFBIG where a full disk gives ENOSPC), 200 keys: seconds from the
  start to the warning that launching stopped, and to the ``Error:`` line after the runs
  in flight ended;
- the workspace going dark mid-backfill (the Jobs API emulator drops every connection)
  after ``--settle`` seconds with the runs held: seconds from going dark to the
  ``workspace unreachable since`` line, with the launcher's real per-call bounds (not
  shortened as in the tests). With adaptive polling (``launch/policy/poll_policy.py``) the polls
  are still about ``--poll-interval`` apart then; they reach their 15 s ceiling only once
  runs are minutes old (a longer ``--settle`` measures that case).

Usage: ``python benchmarks/failure_latency.py [--trials 3] [--settle 20] [--only NAME]``
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from figures import figure

from databricks_bundle_decorators.testing import JobsEmulator

TARGET_SECONDS = 30.0
DBXDEC = str(Path(sys.executable).parent / "dbxdec")
TOKEN = "dapi-benchmark-token"
PARAMS = {"backfill_key": "", "backfill_start_key": "", "backfill_exact": "false", "source": "x"}
PIPELINES = """
from databricks_bundle_decorators import DailyBackfill, job, task


@task
def step() -> None:
    pass


@job(backfill=DailyBackfill(start_date="2024-01-01", end_date="2024-12-31"), params={"source": "x"})
def nightly() -> None:
    step()
"""
KEYS = ("--keys", "2024-01-01,2024-01-02")


@dataclass
class Outcome:
    seconds: float
    line: str
    code: int | None


class Launcher:
    """``dbxdec`` as a subprocess whose output lines are stamped as they arrive."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.lines: queue.Queue[tuple[float, str, str]] = queue.Queue()
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name in ("out", "err"):
            stream = self.proc.stdout if name == "out" else self.proc.stderr
            threading.Thread(target=self._read, args=(name, stream), daemon=True).start()

    def _read(self, name: str, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.put((time.monotonic(), name, line.rstrip("\n")))

    def wait_for(self, stream: str, test: Callable[[str], bool], timeout: float = 600) -> Outcome:
        """The first line of ``stream`` passing ``test``, and when it came."""
        deadline = time.monotonic() + timeout
        while True:
            at, name, line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if name == stream and test(line):
                return Outcome(at - self.started, line, self.proc.poll())

    def finish(self) -> int:
        return self.proc.wait(timeout=600)


def project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bench"\nversion = "0.1"\n\n'
        '[tool.dbxdec]\npipelines = ["bench_pipelines"]\n'
    )
    (root / "bench_pipelines.py").write_text(PIPELINES)
    return root


def command(
    root: Path, host: str, *args: str, fsize_limit: int | None = None
) -> tuple[list[str], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABRICKS_")}
    env.update(
        DATABRICKS_HOST=host,
        DATABRICKS_TOKEN=TOKEN,
        DATABRICKS_CONFIG_FILE=str(root / "no-databrickscfg"),
    )
    argv = [DBXDEC, *args, "--project", str(root)]
    if fsize_limit is not None:
        setup = (
            "import os, resource, signal, sys; "
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({fsize_limit}, {fsize_limit})); "
            "os.execv(sys.argv[1], sys.argv[1:])"
        )
        argv = [sys.executable, "-c", setup, *argv]
    return argv, env


def error_line(root: Path, host: str, *args: str) -> Outcome:
    launcher = Launcher(*command(root, host, *args))
    outcome = launcher.wait_for("err", lambda line: line.startswith("Error: "))
    outcome.code = launcher.finish()
    return outcome


class _Stub(BaseHTTPRequestHandler):
    server: _StubServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        status, content_type, body = self.server.reply
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


class _StubServer(ThreadingHTTPServer):
    daemon_threads = True
    reply: tuple[int, str, bytes]


@contextmanager
def stub(status: int, body: bytes, content_type: str = "application/json") -> Iterator[str]:
    server = _StubServer(("127.0.0.1", 0), _Stub)
    server.reply = (status, content_type, body)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def rejected(status: int, code: str, message: str) -> Callable[[Path], Outcome]:
    def case(root: Path) -> Outcome:
        body = json.dumps({"error_code": code, "message": message}).encode()
        with stub(status, body) as url:
            return error_line(root, url, "backfill", "nightly", *KEYS)

    return case


def closed_port(root: Path) -> Outcome:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return error_line(root, f"http://127.0.0.1:{port}", "backfill", "nightly", *KEYS)


def dns_failure(root: Path) -> Outcome:
    return error_line(root, "https://dbxdec-bench.invalid", "backfill", "nightly", *KEYS)


def not_databricks(root: Path) -> Outcome:
    with stub(404, b"<html><body>Not Found</body></html>", "text/html") as url:
        return error_line(root, url, "backfill", "nightly", *KEYS)


def ledger_folder_is_a_file(root: Path) -> Outcome:
    folder = root / ".dbxdec" / "backfills"
    folder.parent.mkdir(parents=True)
    folder.write_text("in the way\n")
    with JobsEmulator() as emu:
        emu.create_job("nightly", parameters=PARAMS)
        return error_line(root, emu.url, "backfill", "nightly", *KEYS)


def damaged_ledger(root: Path) -> Outcome:
    folder = root / ".dbxdec" / "backfills"
    folder.mkdir(parents=True)
    (folder / "nightly-20240101T000000-abcd.json").write_text('{"version": 1, "id": "nigh')
    with JobsEmulator() as emu:
        emu.create_job("nightly", parameters=PARAMS)
        return error_line(root, emu.url, "backfill", "--resume", "nightly-20240101T000000-abcd")


def disk_full(root: Path) -> Outcome:
    last = (date(2024, 1, 1) + timedelta(days=199)).isoformat()
    with JobsEmulator() as emu:
        emu.default_duration = 0.05
        emu.create_job("nightly", parameters=PARAMS, max_concurrent_runs=100)
        argv, env = command(
            root,
            emu.url,
            *("backfill", "nightly", "--start", "2024-01-01", "--end", last),
            *("--max-concurrent", "8", "--poll-interval", "0.05"),
            fsize_limit=50_000,
        )
        launcher = Launcher(argv, env)
        told = launcher.wait_for("out", lambda line: "cannot save backfill ledger" in line)
        outcome = launcher.wait_for("err", lambda line: line.startswith("Error: "))
        outcome.code = launcher.finish()
        outcome.line = f"[warning after {told.seconds:.1f} s] {outcome.line}"
        return outcome


def workspace_dark(settle: float) -> Callable[[Path], Outcome]:
    def case(root: Path) -> Outcome:
        with JobsEmulator() as emu:
            emu.hold_runs = True
            job_id = emu.create_job("nightly", parameters=PARAMS, max_concurrent_runs=100)
            launcher = Launcher(
                *command(
                    root,
                    emu.url,
                    "backfill",
                    "nightly",
                    "--start",
                    "2024-01-01",
                    "--end",
                    "2024-01-10",
                    "--max-concurrent",
                    "5",
                )
            )
            emu.wait_for_runs(5, job_id=job_id)
            time.sleep(settle)  # let the polls slow down to their ceiling: the worst case
            dark = time.monotonic()
            emu.set_faults(drop_rate=1.0)
            told = launcher.wait_for("out", lambda line: "workspace unreachable since" in line)
            seconds = told.seconds - (dark - launcher.started)
            emu.set_faults()
            emu.hold_runs = False
            emu.release()
            code = launcher.finish()
            return Outcome(seconds, told.line, code)

    return case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--settle", type=float, default=20.0)
    parser.add_argument("--only", help="run only the case of this name")
    args = parser.parse_args()
    cases: dict[str, Callable[[Path], Outcome]] = {
        "rejected token (401)": rejected(401, "UNAUTHENTICATED", "Invalid access token."),
        "missing permission (403)": rejected(
            403, "PERMISSION_DENIED", "User is not authorized to use this API."
        ),
        "closed port": closed_port,
        "DNS failure (.invalid)": dns_failure,
        "not Databricks (HTML 404)": not_databricks,
        "ledger folder is a file": ledger_folder_is_a_file,
        "damaged ledger (--resume)": damaged_ledger,
        "disk full mid-backfill": disk_full,
        "workspace dark mid-backfill": workspace_dark(args.settle),
    }
    worst = 0.0
    for name, case in cases.items():
        if args.only and args.only not in name:
            continue
        outcomes = []
        for _ in range(args.trials):
            with tempfile.TemporaryDirectory() as scratch:
                outcomes.append(case(project(Path(scratch) / "proj")))
        median = statistics.median(o.seconds for o in outcomes)
        worst = max(worst, median)
        codes = sorted({o.code for o in outcomes}, key=str)
        print(
            f"{name:<28} median {median:5.1f} s  (max {max(o.seconds for o in outcomes):5.1f} s)"
            f"  exit {','.join(str(c) for c in codes)}"
        )
        print(f"    {outcomes[-1].line}")
    figure(
        "failure_latency",
        "slowest failure told (median)",
        worst,
        TARGET_SECONDS,
        better="lower",
        unit="s",
    )


if __name__ == "__main__":
    main()
