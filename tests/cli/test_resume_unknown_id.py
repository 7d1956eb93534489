"""Issue 40: ``--resume`` with an unknown id is one short line naming the job's known
backfills, with no credentials complaint (there was a 318-character line that talked of
credentials and listed no id)."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, LaunchOptions, Ledger
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice

from .clirun import Cli, write_run_project


def test_an_unknown_id_lists_the_jobs_backfills_in_one_short_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CONFIG_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "no-databrickscfg"))
    root = write_run_project(tmp_path / "proj")
    ids = ["cli_daily-20240101T000000-0001", "cli_daily-20240102T000000-0002"]
    for backfill_id in [*ids, "cli_history-20240103T000000-0003"]:
        plan = BackfillPlan(backfill_id.rsplit("-", 2)[0], (Slice(0, ("2024-08-01",)),))
        Ledger.create(
            root,
            plan,
            backend=BackendSpec("local"),
            options=LaunchOptions(),
            backfill_id=backfill_id,
        ).save()

    code, out, err = Cli(root, capsys)("backfill", "--resume", "cli_daily-20990101T000000-abcd")

    assert code == 2, out + err
    (line,) = err.strip().splitlines()
    assert line.startswith("Error: no backfill 'cli_daily-20990101T000000-abcd' here")
    assert f"backfills of cli_daily here: {ids[1]}, {ids[0]}" in line
    assert "cli_history" not in line and "DATABRICKS_TOKEN" not in line
    assert len(line) < 200, len(line)


def test_an_undone_backfill_shows_undone_in_the_list(tmp_path: Path) -> None:
    from databricks_bundle_decorators.cli.output.journal_output import backfill_row

    plan = BackfillPlan("cli_daily", (Slice(0, ("2024-08-01",)),))
    ledger = Ledger.create(tmp_path, plan, backend=BackendSpec("local"), options=LaunchOptions())
    ledger.set_state("succeeded")  # type: ignore[arg-type]
    assert backfill_row(ledger)["state"] == "succeeded"
    ledger.record_undone("main.cli.events", 3)
    assert backfill_row(ledger)["state"] == "undone"
