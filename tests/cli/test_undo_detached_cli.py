"""``dbxdec backfill undo ID`` of a detached backfill finds its journal in the workspace,
under the job of the bundle target ``-t`` names (a development target's name prefix)."""

from __future__ import annotations

from pathlib import Path

from databricks_bundle_decorators.launch.ledger.journal import create_journal
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
    SliceRecord,
    new_backfill_id,
)
from databricks_bundle_decorators.testing import JobsEmulator

from .clirun import NIGHTLY_PARAMS, Cli


def test_undo_finds_a_detached_backfill_s_journal_under_the_target_s_job(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    (project / "databricks.yml").write_text(
        "bundle:\n  name: x\ntargets:\n  dev:\n    mode: development\n"
    )
    dev_id = emu.create_job("[dev emulator] nightly", parameters=NIGHTLY_PARAMS)
    backfill_id = new_backfill_id("nightly")
    done = Attempt(1, "t-1", "succeeded", run_id="5", submitted_at=1.0)
    ledger = Ledger(
        project / "unused.sqlite", backfill_id=backfill_id, job="nightly",
        backend=BackendSpec("databricks", job_id=dev_id, target="dev"),
        options=LaunchOptions(),
        slices=[SliceRecord(0, ("2024-01-01",), {"backfill_key": "2024-01-01"}, (done,))],
    )  # fmt: skip
    ledger.state = "succeeded"
    create_journal(emu.workspace_client(), ledger, job_id=dev_id, writer="cli:test")

    code, _, err = dbxdec("backfill", "undo", backfill_id, "--dry-run")
    assert code == 2 and "nor a detached one in the workspace" in err  # not under 'nightly'
    code, out, err = dbxdec("backfill", "undo", backfill_id, "--dry-run", "-t", "dev")
    # found: the next step speaks (this job was deployed without the undo parameter)
    assert "nor a detached one" not in err, err
    assert code == 2 and "dbxdec_order" in err, out + err
