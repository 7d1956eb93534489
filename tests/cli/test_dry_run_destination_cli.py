"""A dry run aimed at Databricks that cannot reach the workspace (issue 25 item 2):
it names the workspace the runs would go to and why it was not reached, and makes no
estimate -- never "the embedded local Spark", never the local ledgers' run times."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice

from .clirun import Cli

DAY = "2024-01-05"


def closed_port() -> str:
    """A local URL nothing listens on (the port is bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def a_local_backfill_ran_before(project: Path) -> None:
    """A local ledger with a 30-second success: what the old dry run estimated from."""
    plan = BackfillPlan("nightly", (Slice(0, (DAY,)),))
    ledger = Ledger.create(project, plan, backend=BackendSpec("local"), options=LaunchOptions())
    ledger.update(
        ledger.slices[0].with_attempt(Attempt(1, "t", "succeeded", None, None, 100.0, 130.0))
    )
    ledger.save()
    ledger.close()


def test_an_unreachable_host_is_named_with_the_reason(
    dbxdec: Cli, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_local_backfill_ran_before(project)
    url = closed_port()
    monkeypatch.setenv("DATABRICKS_HOST", url)
    code, out, err = dbxdec("backfill", "nightly", "--keys", DAY, "--dry-run", "--json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["destination"] == f"job 'nightly' in the workspace at {url}"
    assert url in document["unreached"]
    assert document["estimate"] is None  # not the local ledger's 30 s run
    # the plain lines (no credentials): tests/cli/test_launch_options_cli.py
