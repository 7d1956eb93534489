"""Issue 40 item 8: read-only commands that need no Spark start none. ``status --local``
reads ledgers and run records; ``backfill undo ID --dry-run`` of a local backfill reads
each table's history from its Delta log (:func:`...delta_history.read_log_commits`).
Each runs as its own process, which reports whether a JVM was started and how long the
command took; the figures are the issue's bounds (2 s and 5 s), measured, not slept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers

from .clirun import FAST, Cli, write_run_project

# Runs one dbxdec command in this process, then says whether PySpark started a JVM.
_PROBE = """
import json, sys, time
from databricks_bundle_decorators.cli.main import main
began = time.monotonic()
try:
    main(sys.argv[1:])
except SystemExit as exited:
    code = exited.code
seconds = time.monotonic() - began
context = sys.modules.get("pyspark.context")
jvm = context is not None and context.SparkContext._gateway is not None
print(json.dumps({"code": code, "seconds": seconds, "jvm": jvm}), file=sys.stderr)
"""


def _probe(root: Path, *args: str) -> tuple[str, dict[str, Any]]:
    checkout = str(Path(__file__).resolve().parents[2])  # tests.cli.run_pipeline
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([checkout, *sys.path[1:]])}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env=env,
    )
    facts = json.loads(done.stderr.strip().splitlines()[-1])
    facts["stderr"] = done.stderr
    return done.stdout, facts


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_run_project(tmp_path / "proj")


@pytest.mark.spark
def test_status_local_and_undo_dry_run_start_no_jvm(
    spark: Any, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Cli(project, capsys)
    days = ("--start", "2024-03-01", "--end", "2024-03-02")
    code, _, err = dbxdec("backfill", "cli_daily", *days, "--local", *FAST)
    assert code == 0, err
    (ledger,) = list_ledgers(project, "cli_daily")

    out, facts = _probe(project, "status", "cli_daily", "--local", *days)
    assert facts["code"] in (0, None) and not facts["jvm"], facts
    assert "■ succeeded 2" in out
    assert facts["seconds"] < 2.0, facts

    out, facts = _probe(project, "backfill", "undo", ledger.id, "--dry-run")
    assert facts["code"] in (0, None) and not facts["jvm"], facts
    assert "main.cli.events" in out and "Dry run: nothing was restored." in out, out
    assert facts["seconds"] < 5.0, facts
