"""The check before a pause: whoever will write ``jobs/update`` holds CAN MANAGE on each
job, or the backfill is refused in one line (exit 4) -- also when the job's ACL cannot be
read because the workspace does not answer. The CLI cases: ``tests/cli/
test_pause_permission_cli.py`` and ``test_pause_schedule_cli.py``."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.errors import WorkspaceRejected
from databricks_bundle_decorators.launch.guard.pause.pause_permission import require_pausable
from databricks_bundle_decorators.testing import JobsEmulator


def test_the_owner_may_pause(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly")
    require_pausable(emu.workspace_client(), {"nightly": job_id}, option="--x", what="trigger")


def test_an_acl_the_workspace_does_not_answer_for_is_exit_4_never_a_pass(
    emu: JobsEmulator,
) -> None:
    job_id = emu.create_job("nightly")
    client = emu.workspace_client(retry_timeout_seconds=1)
    client.current_user.me()  # the caller is known; the ACL read is what fails
    emu.inject_fault(f"/api/2.0/permissions/jobs/{job_id}", status=503, count=1000)
    with pytest.raises(WorkspaceRejected) as refused:
        require_pausable(client, {"nightly": job_id}, option="--downstream", what="trigger")
    line = refused.value.render()
    assert refused.value.exit_code == 4 and "\n" not in line
    assert line.startswith(
        f"--downstream: could not read the permissions of job 'nightly' (job id {job_id}) ("
    ), line
    assert line.endswith("nothing was paused or started: run the command again")
