"""Table-update references in the emulator: the form the trigger page documents
(``{{job.trigger.table_update.<catalog.schema.table>.version}}``, the name as it is) and
the backticked one are both accepted on create and rendered when the trigger fires."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.testing import JobsEmulator

TABLE = "main.raw.orders"


@pytest.mark.parametrize("name", [TABLE, f"`{TABLE}`"], ids=["documented", "backticked"])
def test_both_reference_forms_are_accepted_and_rendered(emu: JobsEmulator, name: str) -> None:
    reference = (
        f"{{{{job.trigger.table_update.{name}.version}}}}@"
        f"{{{{job.trigger.table_update.{name}.commit_timestamp.iso_datetime}}}}"
    )
    job_id = emu.create_job(
        "watcher",
        parameters={"versions": reference},
        settings={"trigger": {"table_update": {"table_names": [TABLE]}}},
    )
    run_id = emu.fire_table_update(
        job_id, {TABLE: 42}, commit_times={TABLE: "2024-01-02T03:04:05Z"}
    )
    run = emu.workspace_client().jobs.get_run(run_id)
    params = {p.name: p.value for p in run.job_parameters or []}
    assert params["versions"] == "42@2024-01-02T03:04:05Z"
