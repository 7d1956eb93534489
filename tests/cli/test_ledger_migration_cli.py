"""A backfill whose ledger an earlier version wrote (``<id>.json``) is listed, shown and
resumed by the CLI; its first save turns it into ``<id>.sqlite``."""

from __future__ import annotations

import json
from pathlib import Path

from databricks_bundle_decorators.launch.ledger.ledger import ledger_dir, load_ledger
from databricks_bundle_decorators.testing import JobsEmulator
from tests.cli.clirun import FAST, NIGHTLY_PARAMS, Cli
from tests.cli.test_reruns_cli import halted_backfill
from tests.launch.conftest import keys_of

DAYS = [f"2024-01-0{d}" for d in range(1, 5)]


def as_an_older_version_left_it(project: Path, backfill_id: str) -> Path:
    ledger = load_ledger(project, backfill_id)
    data = ledger.to_json()
    del data["options"]["tasks"], data["options"]["checks"]  # fields that came later
    legacy = ledger.path.with_suffix(".json")
    legacy.write_text(json.dumps(data, indent=1))
    ledger.path.unlink()
    return legacy


def test_a_json_ledger_is_listed_and_resumed_and_becomes_a_database(
    dbxdec: Cli, emu: JobsEmulator, project: Path
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    halted = halted_backfill(dbxdec, emu)
    legacy = as_an_older_version_left_it(project, halted)

    code, out, err = dbxdec("backfills", "--json")
    assert code == 0, err
    assert [b["id"] for b in json.loads(out)] == [halted]

    code, _, err = dbxdec("backfill", "--resume", halted, *FAST)

    assert code == 0, err
    assert sorted(keys_of(emu, job_id)) == DAYS  # once each (the refused one had no run)
    assert [p.name for p in ledger_dir(project).iterdir()] == [f"{halted}.sqlite"]
    assert not legacy.exists() and load_ledger(project, halted).state == "succeeded"
