"""The one reader of job ACLs: what a principal (the caller, or the principal a job runs
as, with its SCIM groups) holds on a job, through the emulated Permissions and SCIM APIs
with the real SDK. Steering's use of it: ``test_steer_permission.py``."""

from __future__ import annotations

from databricks_bundle_decorators.launch.workspace.job_access import (
    EDIT_LEVELS,
    RUN_LEVELS,
    job_access,
    runs_as,
)
from databricks_bundle_decorators.testing import JobsEmulator

OWNER = "emulator@example.com"
SP = "0c9b8a7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d"


def test_a_job_runs_as_its_creator_unless_run_as_names_a_principal(emu: JobsEmulator) -> None:
    plain = emu.create_job("plain")
    ctl = emu.create_job("ctl", settings={"run_as": {"service_principal_name": SP}})
    emu.set_principal_groups(SP, ["etl"])
    client = emu.workspace_client()
    assert runs_as(client, plain).name == OWNER
    principal = runs_as(client, ctl)
    assert (principal.name, principal.groups) == (SP, frozenset({"users", "etl"}))


def test_a_principal_s_level_through_its_group_and_what_it_lacks(emu: JobsEmulator) -> None:
    job_id = emu.create_job("dependant")
    emu.set_principal_groups(SP, ["etl"])
    emu.set_job_permissions(
        job_id, [("user", OWNER, "IS_OWNER"), ("group", "etl", "CAN_MANAGE_RUN")]
    )
    client = emu.workspace_client()
    sp = runs_as(client, emu.create_job("ctl", settings={"run_as": {"service_principal_name": SP}}))
    may_run = job_access(client, job_id, RUN_LEVELS, principal=sp)
    assert (may_run.grant, may_run.held) == ("CAN_MANAGE_RUN through group etl", "CAN_MANAGE_RUN")
    may_edit = job_access(client, job_id, EDIT_LEVELS, principal=sp)
    assert (may_edit.grant, may_edit.held, may_edit.readable) == (None, "CAN_MANAGE_RUN", True)


def test_an_acl_the_workspace_refuses_to_show_is_no_level_and_said_so(emu: JobsEmulator) -> None:
    job_id = emu.create_job("dependant")
    emu.set_job_permissions(job_id, [("user", "bob@example.com", "IS_OWNER")])
    emu.answer_me_as("alice@example.com")
    access = job_access(emu.workspace_client(), job_id, EDIT_LEVELS)
    assert (access.grant, access.held, access.readable) == (None, "no permission", False)
