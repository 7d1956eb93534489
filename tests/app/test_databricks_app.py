"""The app as Databricks Apps run it: ``python -m databricks_bundle_decorators.app`` from the
``command`` of the ``app.yaml`` that dbxdec generate writes, with the platform's
``DATABRICKS_APP_PORT`` (https://docs.databricks.com/aws/dev-tools/databricks-apps/app-runtime)
and its 15 seconds between SIGTERM and a kill
(https://docs.databricks.com/aws/dev-tools/databricks-apps/best-practices)."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from databricks_bundle_decorators import __version__
from databricks_bundle_decorators.app.__main__ import main
from databricks_bundle_decorators.bundle.framework_wheel import _build_from_directory
from databricks_bundle_decorators.testing import JobsEmulator
from tests.bundle.projects import REPO_ROOT
from tests.cli.clirun import assert_one_error_line
from tests.launch.conftest import BACKFILL_PARAMS, write_project

TOKEN = "dapi-viewer-7f3a19"
SIGTERM_BOUND = 15.0
"""Databricks Apps kill an app that has not stopped 15 seconds after SIGTERM."""


def test_without_databricks_app_port_it_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DATABRICKS_APP_PORT", raising=False)
    assert main([]) == 2
    line = assert_one_error_line(capsys.readouterr().err)
    assert "DATABRICKS_APP_PORT" in line and "dbxdec app" in line


def _fresh_venv(tmp_path: Path) -> Path:
    """A venv holding only dbxdec's wheel, built from this checkout; its other packages
    (Starlette, uvicorn, the SDK) are this environment's, seen through a ``.pth`` file
    placed after the venv's own site-packages, so the wheel's dbxdec wins. No pip of its
    own: this interpreter's pip installs into it (tests/cli/test_init_command.py)."""
    (tmp_path / "wheel").mkdir()
    wheel = _build_from_directory(REPO_ROOT, tmp_path / "wheel", __version__)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    parent = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "dbxdec_parent_env.pth").write_text(
        f"import site; site.addsitedir({parent!r})\n", encoding="utf-8"
    )
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    subprocess.run([*pip, "--no-deps", str(wheel)], check=True, timeout=300)
    return venv


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _lines(stream: object) -> tuple[queue.Queue[str], threading.Thread]:
    """The lines of ``stream`` as they come; the thread ends at its end."""
    found: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:  # type: ignore[attr-defined]
            found.put(line)

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return found, thread


def _wait_for(lines: queue.Queue[str], text: str, seen: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not any(text in line for line in seen):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {text!r} within {timeout} s: {''.join(seen)}")
        try:
            seen.append(lines.get(timeout=left))
        except queue.Empty:
            continue


def _rest(lines: queue.Queue[str], pump: threading.Thread) -> list[str]:
    """What is left in ``lines`` once the process has exited and its pipe is drained."""
    pump.join(30)
    rest: list[str] = []
    while not lines.empty():
        rest.append(lines.get_nowait())
    return rest


def _get(url: str, **headers: str) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.read().decode()


def test_the_app_starts_from_its_app_yaml_in_a_fresh_venv_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    venv = _fresh_venv(tmp_path)
    root = write_project(tmp_path / "project", "dbxdec_app_entry_pipelines")
    with (root / "pyproject.toml").open("a", encoding="utf-8") as pyproject:
        pyproject.write('\n[tool.dbxdec.app]\nname = "bfproj-backfills"\n')
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only the venv's
    dbxdec = [
        str(venv / "bin" / "python"),
        "-c",
        "from databricks_bundle_decorators.cli.main import main; main()",
    ]
    generated = subprocess.run(
        [*dbxdec, "generate"],
        cwd=root,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert generated.returncode == 0, generated.stderr
    app_yaml = yaml.safe_load((root / "app.yaml").read_text(encoding="utf-8"))
    command = app_yaml["command"]
    assert command[0] == "python"  # found on PATH: the app's own environment

    with JobsEmulator(token=TOKEN) as emu:
        emu.create_job("nightly", parameters={**BACKFILL_PARAMS, "source": "x"})
        port = _free_port()
        environ = {
            "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "DATABRICKS_APP_PORT": str(port),
            "DATABRICKS_HOST": emu.url,
            "DATABRICKS_CONFIG_FILE": str(tmp_path / "no-databrickscfg"),
            "HOME": str(tmp_path),
            **{entry["name"]: entry["value"] for entry in app_yaml["env"]},
        }
        process = subprocess.Popen(
            command,
            cwd=root,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        seen: list[str] = []
        try:
            lines, pump = _lines(process.stdout)
            _wait_for(lines, "Application startup complete", seen, timeout=60)  # uvicorn's
            _wait_for(lines, f"Serving on http://0.0.0.0:{port}/", seen, timeout=5)
            base = f"http://127.0.0.1:{port}"
            assert _get(f"{base}/healthz") == (200, "ok")
            status, page = _get(f"{base}/", **{"x-forwarded-access-token": TOKEN})
            assert status == 200
            assert TOKEN not in page
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=SIGTERM_BOUND + 5)
            stopped_after = time.monotonic() - started
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        seen.extend(_rest(lines, pump))
        # uvicorn shuts down, then re-raises the SIGTERM it caught (uvicorn/server.py
        # capture_signals), so the process ends by that signal, after its shutdown.
        assert code in (0, -signal.SIGTERM), "".join(seen)
        assert any("Finished server process" in line for line in seen), "".join(seen)
        assert stopped_after < SIGTERM_BOUND  # the platform's bound, not a benchmark
    where = "import databricks_bundle_decorators as d; print(d.__file__)"
    origin = subprocess.run(
        [str(venv / "bin" / "python"), "-c", where],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env=clean,
    ).stdout
    assert origin.startswith(str(venv)), origin  # the wheel's dbxdec, not this checkout
