"""The emulator's OAuth M2M endpoints, through the SDK's own ``oauth-m2m`` strategy."""

from __future__ import annotations

import pytest
import requests
from databricks.sdk import WorkspaceClient
from databricks.sdk.config import Config

from databricks_bundle_decorators.testing import JobsEmulator

APP_ID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


@pytest.fixture
def emu() -> JobsEmulator:  # type: ignore[misc]
    with JobsEmulator(token="dapi-only-the-pat") as emulator:
        emulator.add_service_principal(APP_ID, "right-secret", display_name="etl robot")
        yield emulator


def _client(emu: JobsEmulator, secret: str) -> WorkspaceClient:
    config = Config(
        host=emu.url,
        client_id=APP_ID,
        client_secret=secret,
        auth_type="oauth-m2m",
        retry_timeout_seconds=2,
    )
    return WorkspaceClient(config=config)


def test_the_discovery_document_names_the_token_endpoint(emu: JobsEmulator) -> None:
    found = requests.get(f"{emu.url}/oidc/.well-known/oauth-authorization-server", timeout=5)
    assert found.json()["token_endpoint"] == f"{emu.url}/oidc/v1/token"
    assert found.json()["authorization_endpoint"] == f"{emu.url}/oidc/v1/authorize"


def test_a_token_for_the_right_secret_authorizes_as_the_service_principal(
    emu: JobsEmulator,
) -> None:
    client = _client(emu, "right-secret")
    me = client.current_user.me()
    assert (me.user_name, me.display_name, me.emails or []) == (APP_ID, "etl robot", [])
    list(client.jobs.list(limit=1))
    assert emu.service_principal_calls(APP_ID) == [
        ("GET", "/api/2.0/preview/scim/v2/Me"),
        ("GET", "/api/2.2/jobs/list"),
    ]
    assert emu.refused_token_requests == 0


def test_a_wrong_secret_or_grant_is_refused_as_rfc_6749_says(emu: JobsEmulator) -> None:
    with pytest.raises(ValueError, match="invalid_client: Client authentication failed"):
        _client(emu, "wrong-secret").current_user.me()
    assert emu.refused_token_requests == 1
    token = f"{emu.url}/oidc/v1/token"
    grant = requests.post(token, {"grant_type": "password"}, auth=(APP_ID, "right-secret"))
    assert grant.status_code == 400 and grant.json()["error"] == "unsupported_grant_type"
    unknown = requests.post(token, {"grant_type": "client_credentials"}, auth=("x", "y"))
    assert unknown.status_code == 401 and unknown.json()["error"] == "invalid_client"
    forged = requests.get(
        f"{emu.url}/api/2.2/jobs/list", headers={"Authorization": "Bearer emu-oauth-forged"}
    )
    assert forged.status_code == 401  # only issued tokens authorize
