"""The controller's own identity when the SDK's default auth does not reach the workspace:
OAuth M2M as a service principal whose client ID and secret are in a secret scope
(:func:`databricks_bundle_decorators.launch.control.entry.controller_client`).

The controller runs in this process (``entry.main``), with no Databricks credentials in
its environment and no configuration file; a stand-in ``dbutils`` answers the secret
scope (as the notebook tests' stand-in answers widgets), and the emulator serves the
OIDC discovery document and token endpoint the SDK's ``oauth-m2m`` strategy asks
(:mod:`databricks_bundle_decorators.testing._endpoints._emulator_permissions`). The controller
job deployed here is a plain job, so that ``--detach`` starts no process of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from databricks_bundle_decorators.definitions import Registry
from databricks_bundle_decorators.launch.control import entry
from databricks_bundle_decorators.launch.ledger.journal import read_journal
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS
from .controller_fixtures import CONTROLLER_PARAMS, RUN_SECONDS, TOKEN, Workspace
from .test_scheduler import day

KEYS = [day(i) for i in range(3)]
APP_ID = "6f1c2e3a-0b4d-4e5f-9a8b-7c6d5e4f3a2b"
SECRET = "dose-sp-secret-9b1f"
SCOPE = "dbxdec-controller"
RUN_NOW = ("POST", "/api/2.2/jobs/run-now")


@dataclass
class _Secrets:
    """``dbutils.secrets``: ``get(scope, key)``, a missing key raising as it does."""

    values: dict[tuple[str, str], str]
    asked: list[tuple[str, str]] = field(default_factory=list)

    def get(self, scope: str, key: str) -> str:
        self.asked.append((scope, key))
        return self.values[(scope, key)]


@dataclass
class _StandInDbutils:
    secrets: _Secrets


def _dbutils(secret: str) -> _StandInDbutils:
    return _StandInDbutils(
        _Secrets({(SCOPE, "client_id"): APP_ID, (SCOPE, "client_secret"): secret})
    )


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    for name in ("DATABRICKS_TOKEN", "DATABRICKS_CLIENT_ID", "DATABRICKS_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    for name in ("DATABRICKS_CONFIG_PROFILE", "DATABRICKS_AUTH_TYPE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "no-databrickscfg"))
    with JobsEmulator(token=TOKEN) as emu:
        emu.default_duration = RUN_SECONDS
        emu.add_service_principal(APP_ID, SECRET, display_name="dbxdec controller")
        job_id = emu.create_job(
            "nightly", parameters={**BACKFILL_PARAMS, "source": "x"}, max_concurrent_runs=10
        )
        controller = emu.create_job("dbxdec_controller", parameters=CONTROLLER_PARAMS)
        monkeypatch.setenv("DATABRICKS_HOST", emu.url)  # the host, and no credential
        yield Workspace(emu, job_id, controller, tmp_path)


def _controller(workspace: Workspace, backfill_id: str, *extra: str, dbutils: object = None) -> int:
    argv = [
        f"--backfill_id={backfill_id}",
        f"--job_id={workspace.job_id}",
        "--run_id=4242",
        "--poll_interval=0.05",
        "--control_every=0.05",
        "--client_timeout=5",
        *extra,
    ]
    with pytest.raises(SystemExit) as ended:
        entry.main(argv, dbutils=dbutils)  # type: ignore[arg-type]
    return int(ended.value.code or 0)


def _no_credential_anywhere(workspace: Workspace, output: str) -> None:
    assert SECRET not in output and TOKEN not in output and "emu-oauth-" not in output
    for path, content in workspace.emu.workspace_files("/").items():  # journal, claims
        assert SECRET.encode() not in content and b"emu-oauth-" not in content, path


def test_without_default_auth_the_controller_drives_the_backfill_as_the_service_principal(
    workspace: Workspace, registry: Registry, capfd: pytest.CaptureFixture[str]
) -> None:
    detached = workspace.detach(registry, KEYS)
    dbutils = _dbutils(SECRET)
    assert (
        _controller(workspace, detached.backfill_id, f"--secret_scope={SCOPE}", dbutils=dbutils)
        == 0
    )
    said = capfd.readouterr()
    assert f"backfill {detached.backfill_id} succeeded" in said.out, said
    assert dbutils.secrets.asked == [(SCOPE, "client_id"), (SCOPE, "client_secret")]
    emu = workspace.emu
    calls = emu.service_principal_calls(APP_ID)
    # every run of the backfill was launched by the service principal, who the claim is; a
    # run-now whose reply outlived --client_timeout on a loaded machine is sent once more
    # with the same idempotency token, so count tokens, not requests
    bodies = emu.run_now_bodies(workspace.job_id)
    assert calls.count(RUN_NOW) == len(bodies)
    assert len({body["idempotency_token"] for body in bodies}) == len(KEYS)
    assert ("GET", "/api/2.0/preview/scim/v2/Me") in calls
    client = emu.workspace_client()
    assert read_journal(client, workspace.job_id, detached.backfill_id).state == "succeeded"
    succeeded = [r.job_parameters["backfill_key"] for r in emu.runs(workspace.job_id)]
    assert sorted(succeeded) == sorted(KEYS)
    assert emu.refused_token_requests == 0
    _no_credential_anywhere(workspace, said.out + said.err)


def test_a_wrong_secret_is_one_line_and_exit_4(
    workspace: Workspace, registry: Registry, capfd: pytest.CaptureFixture[str]
) -> None:
    detached = workspace.detach(registry, KEYS)
    capfd.readouterr()
    wrong = "not-the-secret-31c4"
    code = _controller(
        workspace, detached.backfill_id, f"--secret_scope={SCOPE}", dbutils=_dbutils(wrong)
    )
    said = capfd.readouterr()
    assert code == 4, said
    assert said.out == "" and said.err.count("\n") == 1, said
    assert said.err.startswith("Error: the workspace at ") and (
        f"refused the OAuth client ID and secret in secret scope '{SCOPE}'" in said.err
    )
    assert wrong not in said.err
    assert workspace.emu.refused_token_requests >= 1
    assert workspace.emu.run_now_bodies(workspace.job_id) == []
    _no_credential_anywhere(workspace, said.out + said.err)


def test_no_secret_scope_and_no_default_auth_is_one_line(
    workspace: Workspace, registry: Registry, capfd: pytest.CaptureFixture[str]
) -> None:
    detached = workspace.detach(registry, KEYS)
    capfd.readouterr()
    code = _controller(workspace, detached.backfill_id, dbutils=_dbutils(SECRET))
    said = capfd.readouterr()
    assert code == 2 and said.out == "" and said.err.count("\n") == 1, said
    assert "no default Databricks credentials reach the workspace" in said.err
    assert "set secret_scope in [tool.dbxdec.controller]" in said.err
    assert workspace.emu.service_principal_calls(APP_ID) == []
