"""No token in a page, a log, a URL or a file: the app served as Databricks Apps runs it
(``python -m databricks_bundle_decorators.app`` on ``DATABRICKS_APP_PORT``) and as ``dbxdec
app``, with a token planted in the environment and forwarded by the proxy header, driven
through every page and action; then stopped with SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from databricks_bundle_decorators.app.scopes import REQUIRED_SCOPES
from databricks_bundle_decorators.testing._endpoints._emulator_processes import processes_of

from .appserver import Browserless, Reply
from .conftest import TOKEN, AppWorkspace

FORWARDED = "dapi-forwarded-carol-e41a77"
CAROL = "carol@example.com"
ID = re.compile(r"/backfills/(nightly-\d{8}T\d{6}-[0-9a-f]{4})")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def app_process(
    argv: list[str], env: dict[str, str], cwd: Path
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The app as its own process; yields it and its URL (from its first line)."""
    process = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.search(r"http://[\d.]+:(\d+)/", first)
        assert found is not None, first + (process.stderr.read() if process.stderr else "")
        yield process, f"http://127.0.0.1:{found.group(1)}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def stop(process: subprocess.Popen[str]) -> tuple[float, str]:
    """SIGTERM, then the seconds until it exited and everything it printed."""
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    return time.monotonic() - started, out + err


def browse(app: Browserless) -> list[Reply]:
    """Every page and action of the app, as a user clicks through them."""
    replies = [app.get("/"), app.get("/launch")]
    form = {"job": "nightly", "start": "2024-01-01", "end": "2024-01-02"}
    replies.append(app.post("/launch/preview", form, csrf_from="/launch"))
    launched = app.post("/launch", form, csrf_from="/launch")
    replies.append(launched)
    found = ID.search(launched.headers.get("location", ""))
    assert found is not None, launched.body
    backfill = found.group(1)
    for path in ("", "/live", "/confirm/pause", "/confirm/undo"):
        replies.append(app.get(f"/backfills/{backfill}{path}"))
    replies.append(app.post(f"/backfills/{backfill}/pause", {}, csrf_from="/launch"))
    replies.append(app.post(f"/backfills/{backfill}/cancel", {"csrf": "forged"}))
    replies += [app.get("/backfills/nightly-20240101T000000-dead"), app.get("/jobs/nightly")]
    replies += [app.get("/static/app.css"), app.get("/nowhere")]
    return replies


def everything_written(root: Path, workspace: AppWorkspace) -> list[str]:
    emu = workspace.emu
    texts = [p.read_bytes().decode(errors="replace") for p in root.rglob("*") if p.is_file()]
    texts += [c.decode(errors="replace") for c in emu.workspace_files("/").values()]
    texts += [str(b) for b in emu.run_now_bodies()] + [str(r.job_parameters) for r in emu.runs()]
    for run in processes_of(emu).outputs():  # the controller runs' logs and parameters
        texts += [(run.stdout + run.stderr).decode(errors="replace"), " ".join(run.argv)]
    return texts


def test_no_token_in_a_page_log_url_or_file_as_a_databricks_app(
    app_workspace: AppWorkspace,
) -> None:
    emu, root = app_workspace.emu, app_workspace.root
    emu.add_user_token(FORWARDED, CAROL)
    for job_id in (app_workspace.job_id, app_workspace.controller_job):
        emu.set_job_permissions(job_id, [("user", CAROL, "CAN_MANAGE_RUN")])
    for day in ("2024-01-01", "2024-01-02"):
        emu.set_outcome(day, job_id=app_workspace.job_id, hold=True)
    port = free_port()
    env = {
        **os.environ,
        "DATABRICKS_APP_PORT": str(port),
        "DBXDEC_APP_SCOPES": " ".join(REQUIRED_SCOPES),
    }
    argv = [sys.executable, "-m", "databricks_bundle_decorators.app", "--project", str(root)]
    with app_process(argv, env, root) as (process, url):
        assert url.endswith(f":{port}")
        app = Browserless(url, {"x-forwarded-access-token": FORWARDED})
        replies = browse(app)
        assert replies[3].status == 303  # launched as Carol
        assert ("POST", "/api/2.2/jobs/run-now") in emu.user_calls(CAROL)
        seconds, logs = stop(process)
    assert process.returncode == 0, logs
    assert seconds < 15  # Databricks Apps kills an app 15 s after SIGTERM
    assert "GET / " in logs  # requests are logged (to stdout, as Databricks Apps reads logs)
    pages = [r.body + str(r.headers) for r in replies]
    urls = [r.headers.get("location", "") for r in replies]
    for text in [*pages, *urls, logs, *everything_written(root, app_workspace)]:
        assert FORWARDED not in text
        assert TOKEN not in text


def test_dbxdec_app_serves_on_loopback_and_leaks_no_token(
    app_workspace: AppWorkspace, tmp_path: Path
) -> None:
    root = app_workspace.root
    dbxdec = str(Path(sys.executable).with_name("dbxdec"))
    argv = [dbxdec, "app", "--project", str(root), "--host", app_workspace.emu.url]
    with app_process(argv, dict(os.environ), root) as (process, url):
        assert url.startswith("http://127.0.0.1:")
        replies = browse(Browserless(url, {"x-forwarded-access-token": FORWARDED}))
        port = int(url.rsplit(":", 1)[1])
        taken = subprocess.run(
            [dbxdec, "app", "--project", str(root), "--port", str(port), "--local"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        seconds, logs = stop(process)
    assert taken.returncode == 2
    assert taken.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in taken.stderr
    assert seconds < 15
    pages = [r.body + str(r.headers) for r in replies]
    for text in [*pages, logs, *everything_written(root, app_workspace)]:
        assert FORWARDED not in text and TOKEN not in text
