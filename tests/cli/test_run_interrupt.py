"""Issue 40: one Ctrl-C during the local Spark's start-up cancelled a ``dbxdec run``. As a
backfill drains on the first Ctrl-C, a run now goes on to its end (the second cancels it):
a real SIGINT to a real ``dbxdec run``, sent once the command says it is running (an
event on its stdout, never a sleep)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.status.local_runs import runs_dir

from .clirun import write_run_project

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_one_ctrl_c_lets_the_run_finish(tmp_path: Path) -> None:
    root = write_run_project(tmp_path / "proj")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CHECKOUT), *sys.path[1:]])}
    dbxdec = str(Path(sys.executable).parent / "dbxdec")
    command = [dbxdec, "run", "cli_daily", "--key", "2024-05-01", "--local"]
    with subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("Running cli_daily locally"), first
        process.send_signal(signal.SIGINT)  # the handler is in place before that line
        out, err = process.communicate(timeout=300)
    assert process.returncode == 0, out + err
    assert "interrupt: the run goes on to its end (Ctrl-C again cancels it)" in err
    assert "succeeded for key 2024-05-01" in out
    (record,) = runs_dir(root, "cli_daily").glob("*.json")
    assert json.loads(record.read_text())["state"] == "succeeded"
