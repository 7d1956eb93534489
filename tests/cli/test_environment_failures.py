"""A broken environment ends ``dbxdec backfill`` with one line, its own exit code and
nothing lost, end to end: the ``dbxdec`` console script runs as a subprocess against a
real local HTTP server (a stub answering 401/403 or HTML, a closed port, a host under
``.invalid``, or the Jobs API emulator).

How long each failure takes to be told is measured by ``benchmarks/failure_latency.py``;
the subprocess timeout here only guards against a hang.

A full disk is played by ``RLIMIT_FSIZE``: the launcher runs with a file-size limit (and
SIGXFSZ ignored), so writing the ledger past the limit fails with ``EFBIG`` at the same
call where a full disk fails with ``ENOSPC`` -- the temporary file's write -- and the
launcher handles every ``OSError`` of a save the same way. It works unprivileged (tests
run as root, so permissions would not stop a write).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from databricks_bundle_decorators.errors import EXIT_CODES
from databricks_bundle_decorators.launch.ledger.ledger import ledger_dir, read_ledger
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import BACKFILL_PARAMS, keys_of, write_project

DBXDEC = str(Path(sys.executable).parent / "dbxdec")
TOKEN = "dapi-do-not-print-0123456789abcdef"
NIGHTLY_PARAMS = {**BACKFILL_PARAMS, "source": "x"}
RUN_NOW = "/api/2.2/jobs/run-now"
KEYS = ("--keys", "2024-01-01,2024-01-02")
HANG_GUARD = 180  # seconds: only a hang reaches it


@dataclass(frozen=True)
class Finished:
    code: int
    out: str
    err: str
    seconds: float = 0.0  # the whole process, interpreter start included


def dbxdec(
    project: Path, host: str, *args: str, home: Path, fsize_limit: int | None = None
) -> Finished:
    """``dbxdec args --project project`` as a subprocess with ``host`` and ``TOKEN``;
    ``fsize_limit``: the largest file (bytes) it may write, SIGXFSZ ignored."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABRICKS_")}
    env.update(
        DATABRICKS_HOST=host,
        DATABRICKS_TOKEN=TOKEN,
        DATABRICKS_CONFIG_FILE=str(home / "no-databrickscfg"),
        HOME=str(home),
    )
    command = [DBXDEC, *args, "--project", str(project)]
    if fsize_limit is not None:  # limits set before exec() hold in the launcher
        setup = (
            "import os, resource, signal, sys; "
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({fsize_limit}, {fsize_limit})); "
            "os.execv(sys.argv[1], sys.argv[1:])"
        )
        command = [sys.executable, "-c", setup, *command]
        # coverage could not save its data under the limit either: not measured here
        env = {k: v for k, v in env.items() if not k.startswith("COVERAGE_")}
    began = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=HANG_GUARD)
    seconds = time.monotonic() - began
    assert TOKEN not in done.stdout + done.stderr  # a token is never printed
    return Finished(done.returncode, done.stdout, done.stderr, seconds)


def the_line(err: str) -> str:
    """The one ``Error:`` line on stderr (no traceback, nothing else)."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    return lines[0]


def ledger_files(project: Path) -> dict[str, bytes]:
    folder = ledger_dir(project)
    return {p.name: p.read_bytes() for p in folder.glob("*.sqlite")} if folder.is_dir() else {}


class _Stub(BaseHTTPRequestHandler):
    """Answers every request with the server's canned reply and records it."""

    server: StubServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.server.seen.append((self.command, self.path.split("?")[0]))
        status, content_type, body = self.server.reply
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class StubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, reply: tuple[int, str, bytes]) -> None:
        super().__init__(("127.0.0.1", 0), _Stub)
        self.reply = reply
        self.seen: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def stub(status: int, body: bytes, content_type: str = "application/json") -> Iterator[StubServer]:
    server = StubServer((status, content_type, body))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def databricks_error(code: str, message: str) -> bytes:
    return json.dumps({"error_code": code, "message": message}).encode()


PROBE_BOUND = 5.0
"""Issue 40: a closed port, a DNS failure or a host that is not Databricks fails within
5 s, the whole command (the README says "in seconds"); measured, never slept."""


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there any more: connections are refused
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "proj")


@pytest.fixture
def emu() -> Iterator[JobsEmulator]:
    with JobsEmulator() as emulator:
        emulator.default_duration = 0.02
        yield emulator


@pytest.mark.parametrize(
    ("status", "code", "message", "expected"),
    [
        pytest.param(
            401,
            "UNAUTHENTICATED",
            "Invalid access token.",
            "rejected the credentials (401 UNAUTHENTICATED: Invalid access token): renew the token",
            id="rejected-token",
        ),
        pytest.param(
            403,
            "PERMISSION_DENIED",
            "User is not authorized to use this API.",
            "refused access (403 PERMISSION_DENIED: User is not authorized to use this API): "
            "the identity behind these credentials needs access to the job",
            id="missing-permission",
        ),
    ],
)
def test_a_refusing_workspace_exits_4(
    project: Path, tmp_path: Path, status: int, code: str, message: str, expected: str
) -> None:
    with stub(status, databricks_error(code, message)) as server:
        done = dbxdec(project, server.url, "backfill", "nightly", *KEYS, home=tmp_path)

    assert done.code == 4 == min(k for k, v in EXIT_CODES.items() if "credentials" in v)
    line = the_line(done.err)
    assert line.startswith(f"Error: the workspace at {server.url} ")
    assert expected in line and line.endswith("then run the command again")
    assert ("POST", RUN_NOW) not in server.seen and ledger_files(project) == {}
    assert done.out == ""


def test_a_closed_port_exits_5(project: Path, tmp_path: Path) -> None:
    url = closed_port_url()

    done = dbxdec(project, url, "backfill", "nightly", *KEYS, home=tmp_path)

    assert done.code == 5
    assert the_line(done.err) == (
        f"Error: cannot reach the workspace at {url} (connection refused): check the host "
        "(DATABRICKS_HOST) and the network (VPN, proxy), then run the command again"
    )
    assert ledger_files(project) == {} and done.out == ""
    assert done.seconds < PROBE_BOUND, f"{done.seconds:.1f} s"  # issue 40: within 5 s


def test_a_host_name_that_does_not_resolve_exits_5(project: Path, tmp_path: Path) -> None:
    url = "https://dbxdec-no-such-workspace.invalid"  # RFC 2606: never resolves

    done = dbxdec(project, url, "backfill", "nightly", *KEYS, home=tmp_path)

    assert done.code == 5
    assert the_line(done.err).startswith(
        f"Error: cannot reach the workspace at {url} (host name not found): check the host"
    )
    assert ledger_files(project) == {}
    assert done.seconds < PROBE_BOUND, f"{done.seconds:.1f} s"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        pytest.param(404, b"<html><body>Not Found</body></html>", id="html-404"),
        pytest.param(200, b"<html><body>Welcome to nginx!</body></html>", id="html-200"),
    ],
)
def test_a_server_that_is_not_databricks_exits_5(
    project: Path, tmp_path: Path, status: int, body: bytes
) -> None:
    with stub(status, body, "text/html") as server:
        done = dbxdec(project, server.url, "backfill", "nightly", *KEYS, home=tmp_path)

    assert done.code == 5
    line = the_line(done.err)
    assert line.startswith(f"Error: the workspace at {server.url} is not a Databricks workspace")
    assert "it should be the workspace URL" in line
    assert ("POST", RUN_NOW) not in server.seen and ledger_files(project) == {}
    assert done.seconds < PROBE_BOUND, f"{done.seconds:.1f} s"


def test_a_file_where_the_ledger_folder_should_be_exits_6(
    project: Path, tmp_path: Path, emu: JobsEmulator
) -> None:
    emu.create_job("nightly", parameters=NIGHTLY_PARAMS)
    folder = ledger_dir(project)
    folder.parent.mkdir(parents=True)
    folder.write_text("not a folder\n")

    done = dbxdec(project, emu.url, "backfill", "nightly", *KEYS, home=tmp_path)

    assert done.code == 6
    assert the_line(done.err) == (
        f"Error: cannot write backfill ledgers to {folder} ({folder} is a file, not a folder): "
        "make it a writable folder on a disk with free space; nothing was launched"
    )
    assert folder.read_text() == "not a folder\n"
    assert emu.requests[RUN_NOW] == 0 and emu.runs() == []


def test_a_damaged_ledger_exits_6_and_is_left_as_it_is(
    project: Path, tmp_path: Path, emu: JobsEmulator
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    done = dbxdec(project, emu.url, "backfill", "nightly", *KEYS, home=tmp_path)
    assert done.code == 0, done.err
    ((name, text),) = ledger_files(project).items()
    path = ledger_dir(project) / name
    path.write_bytes(text[: len(text) // 2])  # cut in half, as by a broken copy

    done = dbxdec(project, emu.url, "backfill", "--resume", path.stem, home=tmp_path)

    assert done.code == 6
    line = the_line(done.err)
    assert line.startswith(f"Error: backfill ledger {path} is damaged (DatabaseError: ")
    assert line.endswith(
        "so it cannot be resumed: restore the file from a backup, or move it aside and launch "
        "the keys that have no successful run yet with: dbxdec catchup nightly --start KEY "
        "--end KEY"
    )
    assert path.read_bytes() == text[: len(text) // 2]
    assert len(emu.runs(job_id)) == 2


def test_a_disk_filling_up_mid_backfill_stops_launching_and_resume_runs_every_key_once(
    project: Path, tmp_path: Path, emu: JobsEmulator
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=100)
    keys = [(date(2024, 1, 1) + timedelta(days=i)).isoformat() for i in range(200)]
    span = ("--start", keys[0], "--end", keys[-1], "--max-concurrent", "8")
    fast = ("--poll-interval", "0.01")
    # The first save (~50 kB of log, no attempts) fits; a few ticks later (~8-30 kB of log
    # each) the ledger's write-ahead log does not.
    done = dbxdec(
        project, emu.url, "backfill", "nightly", *span, *fast, home=tmp_path, fsize_limit=150_000
    )

    assert done.code == 6, done.err
    backfill_id = re.search(r"^Backfill (\S+): ", done.out, re.MULTILINE)
    assert backfill_id is not None, done.out
    resume = f"dbxdec backfill --project {project} --resume {backfill_id.group(1)}"
    line = the_line(done.err)
    assert line.startswith(
        "Error: cannot save the backfill ledger (disk I/O error (SQLITE_IOERR_WRITE)): stopped "
        "launching with "
    )
    assert line.endswith(f"free disk space, then finish with: {resume}")
    assert "no new runs will be launched" in done.out  # said when it happened
    # Nothing lost: the ledger is whole, and every run the workspace started has its token
    # in it, so --resume finds each run instead of starting a second one.
    ledger = read_ledger(ledger_dir(project) / f"{backfill_id.group(1)}.sqlite")
    tokens = {a.token for r in ledger.slices for a in r.attempts}
    runs = emu.runs(job_id)
    assert 0 < len(runs) < len(keys)
    assert {r.idempotency_token for r in runs} <= tokens
    assert sorted(keys_of(emu, job_id)) == sorted(set(keys_of(emu, job_id)))

    done = dbxdec(project, emu.url, "backfill", "--resume", ledger.id, *fast, home=tmp_path)

    assert done.code == 0, done.err
    assert done.err == ""
    assert sorted(keys_of(emu, job_id)) == keys  # every key exactly once
    assert read_ledger(ledger.path).state == "succeeded"


def test_the_exit_code_table_is_the_same_in_errors_the_cli_and_the_readme() -> None:
    from databricks_bundle_decorators.cli import main as cli_main
    from databricks_bundle_decorators.errors import (
        LocalStateProblem,
        WorkspaceRejected,
        WorkspaceUnreachable,
    )

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for code, meaning in EXIT_CODES.items():
        assert f"    {code:<4} {meaning}\n" in (cli_main.__doc__ or "")
        assert f"| {code} | {meaning} |\n" in readme
    codes = [WorkspaceRejected.exit_code, WorkspaceUnreachable.exit_code]
    assert [*codes, LocalStateProblem.exit_code] == [4, 5, 6]
