"""The emulator enforces the jobs access-control table once a test set an ACL or changed
the caller: ``jobs/update``/``reset`` need CAN MANAGE or IS OWNER, ``run-now`` and
``runs/cancel``/``cancel-all`` CAN MANAGE RUN or more; admins pass. SCIM lists a
principal's groups. All through the real SDK."""

from __future__ import annotations

import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import PermissionDenied
from databricks.sdk.service.jobs import JobSettings

from databricks_bundle_decorators.testing import JobsEmulator

OWNER = "emulator@example.com"
ALICE = "alice@example.com"
APP = "6a1f0c2e-0000-4000-8000-0000000000aa"


def _update(w: WorkspaceClient, job_id: int) -> None:
    w.jobs.update(job_id, new_settings=JobSettings(max_concurrent_runs=2))


def test_without_an_acl_or_another_caller_nothing_is_checked(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly")
    _update(w, job_id)
    run_id = w.jobs.run_now(job_id).run_id
    w.jobs.cancel_run(run_id)


def test_can_manage_run_may_run_and_cancel_but_not_edit(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly")
    emu.set_job_permissions(job_id, [("user", ALICE, "CAN_MANAGE_RUN")])
    emu.answer_me_as(ALICE)
    run_id = w.jobs.run_now(job_id).run_id
    w.jobs.cancel_run(run_id)
    w.jobs.cancel_all_runs(job_id=job_id)
    with pytest.raises(PermissionDenied) as refused:
        _update(w, job_id)
    assert str(refused.value).startswith(
        f"{ALICE} does not have Owner permissions on Job {job_id}. Please contact the owner "
        "or an administrator for access."
    )
    with pytest.raises(PermissionDenied):
        w.jobs.reset(job_id, new_settings=JobSettings(name="nightly"))
    assert [kind for kind, _ in emu.job_change_bodies(job_id)] == ["create"]


def test_can_view_may_not_run_nor_cancel(emu: JobsEmulator, w: WorkspaceClient) -> None:
    job_id = emu.create_job("nightly")
    run_id = w.jobs.run_now(job_id).run_id  # as the owner, before the ACL
    emu.set_job_permissions(job_id, [("user", ALICE, "CAN_VIEW")])
    emu.answer_me_as(ALICE)
    with pytest.raises(PermissionDenied, match="does not have Manage Run permissions on Job"):
        w.jobs.run_now(job_id)
    with pytest.raises(PermissionDenied):
        w.jobs.cancel_run(run_id)
    with pytest.raises(PermissionDenied):
        w.jobs.cancel_all_runs(job_id=job_id)
    assert len(emu.run_now_bodies(job_id)) == 1


@pytest.mark.parametrize(
    ("grants", "groups"),
    [
        ([("user", ALICE, "CAN_MANAGE")], ()),
        ([("group", "eng", "CAN_MANAGE")], ("eng",)),
        ([("user", ALICE, "CAN_VIEW")], ("admins",)),
    ],
    ids=["can-manage", "via-group", "admin"],
)
def test_can_manage_a_group_or_an_admin_may_edit(
    emu: JobsEmulator,
    w: WorkspaceClient,
    grants: list[tuple[str, str, str]],
    groups: tuple[str, ...],
) -> None:
    job_id = emu.create_job("nightly")
    emu.set_job_permissions(job_id, grants)  # type: ignore[arg-type]
    emu.answer_me_as(ALICE, groups=groups)
    _update(w, job_id)
    assert [kind for kind, _ in emu.job_change_bodies(job_id)] == ["create", "update"]


def test_the_creator_stays_owner_and_another_caller_has_no_level(
    emu: JobsEmulator, w: WorkspaceClient
) -> None:
    job_id = emu.create_job("nightly")
    emu.set_job_permissions(job_id, [("user", ALICE, "CAN_VIEW")])  # names no owner
    _update(w, job_id)  # the creator: a job has exactly one owner
    other = emu.create_job("other")
    emu.answer_me_as(ALICE)
    with pytest.raises(PermissionDenied):
        w.jobs.run_now(other)  # no ACL set on it: only its creator owns it


def test_scim_lists_a_principal_with_its_groups(emu: JobsEmulator, w: WorkspaceClient) -> None:
    emu.set_principal_groups(APP, ["etl"])
    emu.set_principal_groups(ALICE, ["eng", "admins"])
    [sp] = list(w.service_principals.list(filter=f'applicationId eq "{APP}"'))
    assert sp.application_id == APP
    assert [g.display for g in sp.groups or []] == ["users", "etl"]
    [user] = list(w.users.list(filter=f'userName eq "{ALICE}"'))
    assert user.user_name == ALICE
    assert [g.display for g in user.groups or []] == ["users", "eng", "admins"]
    assert list(w.users.list(filter='userName eq "nobody@example.com"')) == []
    assert list(w.service_principals.list(filter=f'applicationId eq "{ALICE}"')) == []
    [me] = list(w.users.list(filter=f'userName eq "{OWNER}"'))  # the caller is a user too
    assert [g.display for g in me.groups or []] == ["users"]


def test_a_job_shows_the_principal_it_runs_as(emu: JobsEmulator, w: WorkspaceClient) -> None:
    plain = emu.create_job("plain")
    as_sp = emu.create_job("ctl", settings={"run_as": {"service_principal_name": APP}})
    assert w.jobs.get(plain).run_as_user_name == OWNER  # the creator, by default
    job = w.jobs.get(as_sp)
    assert job.run_as_user_name == APP
    assert job.settings is not None and job.settings.run_as is not None
    assert job.settings.run_as.service_principal_name == APP
