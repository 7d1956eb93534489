"""Who may do what in the app: a viewer with CAN_VIEW only sees every action disabled with
its reason and is refused (403, one line) when posting directly; the emulator answers as
that viewer through the token the Databricks Apps proxy forwards; without user
authorization, or without a scope, the app is read-only and says so on every page; a
forged POST is refused before anything happens."""

from __future__ import annotations

import re

import pytest

from databricks_bundle_decorators.app.scopes import REQUIRED_SCOPES
from databricks_bundle_decorators.launch.ledger.journal import control_ops

from .appserver import Browserless
from .conftest import AppWorkspace

ALICE, ALICE_TOKEN = "alice@example.com", "dapi-forwarded-alice-9b2d"
BOB, BOB_TOKEN = "bob@example.com", "dapi-forwarded-bob-51fe"
DAYS = ("2024-01-01", "2024-01-02")
ID = re.compile(r"/backfills/(nightly-\d{8}T\d{6}-[0-9a-f]{4})")
ACTIONS = ("pause", "unpause", "cancel", "resume", "undo")


def launch_held_backfill(app_workspace: AppWorkspace) -> str:
    """A detached backfill of two days whose runs stay running, launched as the owner."""
    for day in DAYS:
        app_workspace.emu.set_outcome(day, job_id=app_workspace.job_id, hold=True)
    owner = app_workspace.client()
    form = {"job": "nightly", "start": DAYS[0], "end": DAYS[-1]}
    reply = owner.post("/launch", form, csrf_from="/launch")
    assert reply.status == 303, reply.body
    found = ID.search(reply.headers["location"])
    assert found is not None
    return found.group(1)


@pytest.fixture
def grants(app_workspace: AppWorkspace) -> AppWorkspace:
    """Alice may view job nightly, Bob may manage its runs; both reach the app through
    the forwarded-token header."""
    emu = app_workspace.emu
    emu.add_user_token(ALICE_TOKEN, ALICE)
    emu.add_user_token(BOB_TOKEN, BOB)
    emu.set_job_permissions(
        app_workspace.job_id, [("user", ALICE, "CAN_VIEW"), ("user", BOB, "CAN_MANAGE_RUN")]
    )
    return app_workspace


def as_user(client: Browserless, token: str) -> Browserless:
    client.headers["x-forwarded-access-token"] = token
    return client


def test_a_viewer_with_can_view_sees_actions_disabled_and_is_refused(grants: AppWorkspace) -> None:
    backfill = launch_held_backfill(grants)
    scopes = frozenset(REQUIRED_SCOPES)
    with grants.another_app(user_authorization=True, granted_scopes=scopes) as app:
        alice = as_user(app, ALICE_TOKEN)
        page = alice.get(f"/backfills/{backfill}")
        assert page.status == 200, page.body
        assert ALICE in page.body  # the app shows who it acts as
        for action in ACTIONS:
            button = re.search(
                rf'<button type="button" disabled title="([^"]*)" data-action="{action}"', page.body
            )
            assert button is not None, f"{action} is not disabled for a viewer"
            assert "needs CAN_MANAGE_RUN" in button.group(1) or action in (
                "unpause",
                "resume",
                "undo",
            )
        assert "may not steer backfills of job nightly: that needs CAN_MANAGE_RUN" in page.body
        before = len(control_ops(grants.emu.workspace_client(), grants.job_id, backfill))

        refused = alice.post(f"/backfills/{backfill}/pause", {}, csrf_from="/launch")

        assert refused.status == 403
        assert refused.body.count("\n") == 1 and "needs CAN_MANAGE_RUN" in refused.body
        assert len(control_ops(grants.emu.workspace_client(), grants.job_id, backfill)) == before
        assert ("GET", "/api/2.0/preview/scim/v2/Me") in grants.emu.user_calls(ALICE)
        launch = alice.post(
            "/launch", {"job": "nightly", "keys": "2024-02-01"}, csrf_from="/launch"
        )
        assert launch.status == 403 and "needs CAN_MANAGE_RUN" in launch.body
        assert not [
            r
            for r in grants.emu.runs(grants.job_id)
            if r.job_parameters.get("backfill_key") == "2024-02-01"
        ]


def test_a_viewer_with_can_manage_run_pauses_as_themselves(grants: AppWorkspace) -> None:
    backfill = launch_held_backfill(grants)
    scopes = frozenset(REQUIRED_SCOPES)
    with grants.another_app(user_authorization=True, granted_scopes=scopes) as app:
        bob = as_user(app, BOB_TOKEN)
        page = bob.get(f"/backfills/{backfill}")
        assert f'href="/backfills/{backfill}/confirm/pause"' in page.body
        confirm = bob.get(f"/backfills/{backfill}/confirm/pause")
        assert "launches no new runs" in confirm.body

        done = bob.post(
            f"/backfills/{backfill}/pause", {}, csrf_from=f"/backfills/{backfill}/confirm/pause"
        )

        assert done.status == 303, done.body
        ops = control_ops(grants.emu.workspace_client(), grants.job_id, backfill)
        assert [(op.op, op.by) for op in ops][-1] == ("pause", BOB)


def test_without_user_authorization_every_page_is_read_only(grants: AppWorkspace) -> None:
    backfill = launch_held_backfill(grants)
    with grants.another_app(
        user_authorization=True, granted_scopes=frozenset(REQUIRED_SCOPES)
    ) as app:
        for path in ("/", "/launch", f"/backfills/{backfill}"):
            page = app.get(path)  # no forwarded token: user authorization is off
            assert page.status == 200, page.body
            assert 'id="read-only"' in page.body and "user authorization is off" in page.body
        refused = app.post(f"/backfills/{backfill}/pause", {}, csrf_from="/launch")
        assert refused.status == 403 and "user authorization is off" in refused.body


def test_a_missing_scope_makes_the_app_read_only_and_names_it(grants: AppWorkspace) -> None:
    backfill = launch_held_backfill(grants)
    granted = frozenset(REQUIRED_SCOPES[1:])
    with grants.another_app(user_authorization=True, granted_scopes=granted) as app:
        bob = as_user(app, BOB_TOKEN)
        for path in ("/", "/launch", f"/backfills/{backfill}"):
            page = bob.get(path)
            assert 'id="read-only"' in page.body and REQUIRED_SCOPES[0] in page.body
        refused = bob.post(f"/backfills/{backfill}/pause", {}, csrf_from="/launch")
        assert refused.status == 403 and REQUIRED_SCOPES[0] in refused.body


def test_a_forged_post_is_refused_before_anything_happens(app_workspace: AppWorkspace) -> None:
    backfill = launch_held_backfill(app_workspace)
    app = app_workspace.client()
    app.get("/")  # a session cookie, but no form token
    forged = app.post(f"/backfills/{backfill}/cancel", {"csrf": "0" * 64})
    assert forged.status == 403
    assert forged.body.startswith("refused: the form token") and forged.body.count("\n") == 1
    other_site = app_workspace.client()
    other_site.headers["Origin"] = "https://evil.example"
    cross = other_site.post(f"/backfills/{backfill}/cancel", {}, csrf_from="/launch")
    assert cross.status == 403 and "another site" in cross.body
    assert not control_ops(app_workspace.emu.workspace_client(), app_workspace.job_id, backfill)
