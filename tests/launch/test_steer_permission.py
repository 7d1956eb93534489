"""Who may steer a detached backfill: CAN_MANAGE_RUN or more on the job, directly, through
a group the caller is in, or as a workspace admin; read through the emulated
Permissions API with the real SDK."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.errors import WorkspaceRejected
from databricks_bundle_decorators.launch.steer.steering import require_steering
from databricks_bundle_decorators.testing import JobsEmulator

ALICE = "alice@example.com"


def _check(emu: JobsEmulator, job_id: int) -> str:
    steerer = require_steering(
        emu.workspace_client(), job_id, job="nightly", action="pause", backfill_id="nightly-1"
    )
    return steerer.grant


def test_the_acl_read_is_the_sdks_job_permissions(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly")
    emu.set_job_permissions(
        job_id, [("user", ALICE, "CAN_VIEW"), ("group", "eng", "CAN_MANAGE_RUN")]
    )
    emu.answer_me_as(ALICE)
    acl = emu.workspace_client().jobs.get_permissions(str(job_id))
    assert acl.object_type == "job"
    entries = {
        (e.user_name or e.group_name): [
            (p.permission_level.value if p.permission_level else "", p.inherited)
            for p in e.all_permissions or []
        ]
        for e in acl.access_control_list or []
    }
    assert entries == {
        ALICE: [("CAN_VIEW", False)],
        "eng": [("CAN_MANAGE_RUN", False)],
        "emulator@example.com": [("IS_OWNER", False)],  # a job has exactly one owner: its creator
        "admins": [("CAN_MANAGE", True)],
    }


def test_the_creator_owns_a_job_and_may_steer(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly")
    assert _check(emu, job_id) == "IS_OWNER"


@pytest.mark.parametrize(
    ("grants", "groups", "grant"),
    [
        ([("user", ALICE, "CAN_MANAGE_RUN")], (), "CAN_MANAGE_RUN"),
        ([("user", ALICE, "CAN_MANAGE")], (), "CAN_MANAGE"),
        ([("group", "eng", "CAN_MANAGE_RUN")], ("eng",), "CAN_MANAGE_RUN through group eng"),
        ([("user", ALICE, "CAN_VIEW")], ("admins",), "CAN_MANAGE through group admins"),
    ],
    ids=["direct", "manage", "via-group", "admin"],
)
def test_a_steering_level_allows(
    emu: JobsEmulator, grants: list[tuple[str, str, str]], groups: tuple[str, ...], grant: str
) -> None:
    job_id = emu.create_job("nightly")
    emu.set_job_permissions(job_id, grants)  # type: ignore[arg-type]
    emu.answer_me_as(ALICE, groups=groups)
    assert _check(emu, job_id) == grant


@pytest.mark.parametrize(
    ("grants", "groups"),
    [
        ([("user", ALICE, "CAN_VIEW")], ()),
        ([("group", "eng", "CAN_MANAGE_RUN")], ("ops",)),
        ([("user", "bob@example.com", "CAN_MANAGE_RUN")], ()),  # 403 on the ACL read
    ],
    ids=["view-only", "other-group", "no-level"],
)
def test_without_a_steering_level_the_refusal_is_one_line(
    emu: JobsEmulator, grants: list[tuple[str, str, str]], groups: tuple[str, ...]
) -> None:
    job_id = emu.create_job("nightly")
    emu.set_job_permissions(job_id, grants)  # type: ignore[arg-type]
    emu.answer_me_as(ALICE, groups=groups)
    with pytest.raises(WorkspaceRejected) as refused:
        _check(emu, job_id)
    assert refused.value.exit_code == 4
    assert str(refused.value) == (
        f"{ALICE} may not pause backfill nightly-1: that needs CAN_MANAGE_RUN on job nightly "
        f"(job id {job_id}), granted to the user or to a group they are directly in; ask an "
        "owner of the job to grant it (a writable /Shared folder is not enough)"
    )


def test_a_service_principal_is_matched_by_its_application_id(emu: JobsEmulator) -> None:
    job_id = emu.create_job("nightly")
    app = "6a1f0c2e-0000-4000-8000-000000000001"
    emu.set_job_permissions(job_id, [("service_principal", app, "CAN_MANAGE_RUN")])
    emu.answer_me_as_service_principal(app, "ctl")
    assert _check(emu, job_id) == "CAN_MANAGE_RUN"
