"""The backfill app as a Databricks App (bundle/app_resource.py): [tool.dbxdec.app], the
``apps:`` resource of dbxdec generate and load_resources, app.yaml and requirements.txt."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators import __version__
from databricks_bundle_decorators.app.settings import databricks_app_settings
from databricks_bundle_decorators.bundle import SchemaValidator
from databricks_bundle_decorators.bundle.app_resource import (
    APP_COMMAND,
    REQUIRED_SCOPES,
    USER_API_SCOPES,
)
from databricks_bundle_decorators.bundle.project import app_options
from databricks_bundle_decorators.errors import UsageError
from tests.cli.clirun import assert_one_error_line, run

from .projects import DAILY_PIPELINE, make_project, schema_path
from .projects import TestProject as _Project

APP = '[tool.dbxdec.app]\nname = "sales-backfills"\ndescription = "Backfills of sales"\n'
WHEEL = f"./wheels/dbxdec-{__version__}-py3-none-any.whl"


def _project(root: Path, app: str = APP) -> _Project:
    # The [tool.dbxdec.app] table goes last: the pyproject's [tool.dbxdec] ends with it.
    return make_project(root, DAILY_PIPELINE, tool=app)


def _generate(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run(["generate", "--project", str(root), *args], capsys)


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_generate_writes_an_app_resource_the_official_schema_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _project(tmp_path)
    code, out, err = _generate(tmp_path, capsys, "-t", "dev")
    assert (code, err) == (0, ""), err
    assert "Wrote the Databricks App 'sales-backfills':" in out
    document = _load(tmp_path / "resources" / "sales_backfills.app.yml")
    jobs = sorted(path.name[: -len(".job.yml")] for path in tmp_path.glob("resources/*.job.yml"))
    assert jobs == sorted(["dbxdec_controller", p.job("nightly"), p.job("sales")])
    assert document == {
        "resources": {
            "apps": {
                "sales_backfills": {
                    "name": "sales-backfills",
                    "description": "Backfills of sales",
                    "source_code_path": "..",  # the project root, from resources/
                    "user_api_scopes": list(REQUIRED_SCOPES),
                    # read-only, for the banner mode when user authorization is off
                    "resources": [
                        {
                            "name": job,
                            "job": {
                                "id": f"${{resources.jobs.{job}.id}}",
                                "permission": "CAN_VIEW",
                            },
                        }
                        for job in jobs
                    ],
                }
            }
        }
    }
    assert SchemaValidator(schema_path()).document_problems(document) == []
    broken = {"resources": {"apps": {"x": {"name": "x", "user_api_scopes": "sql"}}}}
    assert SchemaValidator(schema_path()).document_problems(broken) != []  # it can fail
    code, out, err = run(
        ["validate", "--project", str(tmp_path), "--schema", str(schema_path())], capsys
    )
    assert (code, err) == (0, ""), out  # dbxdec validate checks the app resource too


def test_app_yaml_tells_the_app_what_databricks_app_settings_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The producer (generate) and the consumer (the app's settings) agree: the scopes
    granted are the required ones, the target is the one generated for."""
    _project(tmp_path)
    assert _generate(tmp_path, capsys, "-t", "prod")[0] == 0
    app_yaml = _load(tmp_path / "app.yaml")
    assert app_yaml["command"] == list(APP_COMMAND)
    assert all(isinstance(part, str) for part in app_yaml["command"])  # a list, no shell
    environ = {entry["name"]: entry["value"] for entry in app_yaml["env"]}
    settings = databricks_app_settings(tmp_path, {**environ, "DATABRICKS_HOST": "https://h"})
    assert settings.granted_scopes == frozenset(REQUIRED_SCOPES)
    assert settings.missing_scopes == ()
    assert settings.connection is not None and settings.connection.target == "prod"
    assert settings.pipelines == ()  # the pyproject's pipelines are the generated ones
    for entry in app_yaml["env"]:
        assert set(entry) == {"name", "value"}
    requirements = (tmp_path / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert requirements[1:] == [f"{WHEEL}[app]", "."]


def test_without_user_authorization_no_scope_is_asked_and_the_app_is_read_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """For a workspace where user authorization is not enabled, where a resource with
    ``user_api_scopes`` does not deploy."""
    _project(tmp_path, app=f"{APP}user_authorization = false\n")
    assert _generate(tmp_path, capsys)[0] == 0
    app = _load(tmp_path / "resources" / "sales_backfills.app.yml")["resources"]["apps"]
    assert "user_api_scopes" not in app["sales_backfills"]
    environ = {e["name"]: e["value"] for e in _load(tmp_path / "app.yaml")["env"]}
    assert "DBXDEC_APP_SCOPES" not in environ
    assert databricks_app_settings(tmp_path, environ).missing_scopes == REQUIRED_SCOPES


def test_pipelines_given_on_the_command_line_reach_the_app(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _project(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        (tmp_path / "pyproject.toml")
        .read_text(encoding="utf-8")
        .replace(f'pipelines = ["{p.module}"]', "pipelines = []"),
        encoding="utf-8",
    )
    assert _generate(tmp_path, capsys, "--pipelines", p.module)[0] == 0
    environ = {e["name"]: e["value"] for e in _load(tmp_path / "app.yaml")["env"]}
    assert databricks_app_settings(tmp_path, environ).pipelines == (p.module,)


def test_generation_is_byte_stable_and_an_app_removed_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path)
    files = [tmp_path / "resources" / "sales_backfills.app.yml"]
    files += [tmp_path / "app.yaml", tmp_path / "requirements.txt"]
    assert _generate(tmp_path, capsys)[0] == 0
    first = {path: path.read_bytes() for path in files}
    assert _generate(tmp_path, capsys)[0] == 0
    assert {path: path.read_bytes() for path in files} == first
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace(APP, ""), encoding="utf-8")
    code, out, _ = _generate(tmp_path, capsys)
    assert code == 0 and "Databricks App" not in out
    assert [path for path in files if path.exists()] == []
    assert list((tmp_path / "resources").glob("*.job.yml"))  # the jobs stay


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('[tool.dbxdec.app]\nname = "Sales"\n', "lowercase letters, digits and hyphens"),
        ('[tool.dbxdec.app]\nname = "sales_app"\n', "name is 'sales_app'"),
        (f'[tool.dbxdec.app]\nname = "{"a" * 31}"\n', "at most 30 characters"),
        ("[tool.dbxdec.app]\ndescription = 'x'\n", "name is missing"),
        ('[tool.dbxdec.app]\nname = "ok"\nport = 8000\n', "unknown setting 'port'"),
        ('[tool.dbxdec.app]\nname = "ok"\ndescription = 3\n', "description must be a string"),
        ('app = "sales"\n', "must be a table"),
        ('[tool.dbxdec.app]\nname = "ok"\nuser_authorization = "no"\n', "true or false"),
    ],
    ids=[
        "uppercase",
        "underscore",
        "too-long",
        "no-name",
        "unknown-key",
        "description",
        "not-table",
        "user-authorization",
    ],
)
def test_a_bad_app_setting_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, said: str
) -> None:
    _project(tmp_path, app=table)
    code, out, err = _generate(tmp_path, capsys)
    line = assert_one_error_line(err)
    assert code == 2 and out == ""
    assert said in line and "[tool.dbxdec.app]" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["databricks.yml", "pyproject.toml", f"{next(tmp_path.glob('*.py')).name}"]
    )


def test_the_name_rule_cites_its_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, app='[tool.dbxdec.app]\nname = "Sales"\n')
    line = assert_one_error_line(_generate(tmp_path, capsys)[2])
    assert "https://docs.databricks.com/aws/dev-tools/cli/reference/apps-commands" in line


def test_a_requirements_file_of_the_users_own_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path)
    (tmp_path / "requirements.txt").write_text("pandas\n", encoding="utf-8")
    code, _, err = _generate(tmp_path, capsys)
    assert code == 2
    assert "was not written by dbxdec" in assert_one_error_line(err)
    assert (tmp_path / "requirements.txt").read_text(encoding="utf-8") == "pandas\n"
    assert not (tmp_path / "resources").exists() and not (tmp_path / "app.yaml").exists()


def test_a_framework_wheel_outside_the_project_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, app=f'framework_wheel = "/Volumes/a/b/c/x.whl"\n{APP}')
    code, _, err = _generate(tmp_path, capsys)
    assert code == 2
    assert "framework_wheel inside the project" in assert_one_error_line(err)
    assert not (tmp_path / "resources").exists()


_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-"


@given(st.text(alphabet=_NAME_CHARS, min_size=1, max_size=30))
def test_every_name_within_the_rule_is_accepted(name: str) -> None:
    options = app_options({"app": {"name": name}}, Path("pyproject.toml"))
    assert options is not None and options.name == name
    assert "-" not in options.resource_key


@given(
    st.text(alphabet=_NAME_CHARS, max_size=29),
    st.characters(blacklist_characters=_NAME_CHARS),
    st.text(alphabet=_NAME_CHARS, max_size=29),
)
def test_a_name_with_any_other_character_is_refused(head: str, bad: str, tail: str) -> None:
    with pytest.raises(UsageError, match="lowercase letters, digits and hyphens"):
        app_options({"app": {"name": head + bad + tail}}, Path("pyproject.toml"))


def test_each_scope_says_what_it_covers_and_the_jobs_gap_is_named() -> None:
    assert len(set(REQUIRED_SCOPES)) == len(REQUIRED_SCOPES)
    assert all(scope.covers for scope in USER_API_SCOPES)
    from databricks_bundle_decorators.app import scopes

    assert scopes.REQUIRED_SCOPES == REQUIRED_SCOPES  # one list, read by the app's settings
    assert "Jobs API" in scopes.JOBS_SCOPE_GAP


def test_load_resources_adds_the_same_app_through_the_cli_phase(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m databricks.bundles.build``, as the Databricks CLI runs it: the app comes
    out as generate writes it, its source folder the bundle root (paths of Python
    resources are relative to databricks.yml), and app.yaml is written for the target."""
    _project(tmp_path)
    work = tmp_path / "io"
    work.mkdir()
    document = {
        "bundle": {"name": "test", "target": "dev"},
        "python": {"resources": ["databricks_bundle_decorators.bundle:load_resources"]},
        "variables": {"catalog": {"value": "dev"}},
    }
    (work / "input.json").write_text(json.dumps(document), encoding="utf-8")
    exchange = [f"--{name}={work / name}.json" for name in ("input", "output", "diagnostics")]
    completed = subprocess.run(
        [sys.executable, "-m", "databricks.bundles.build", "--phase", "load_resources", *exchange],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    diagnostics = (work / "diagnostics.json").read_text(encoding="utf-8").splitlines()
    assert [d for d in map(json.loads, diagnostics) if d.get("severity") == "error"] == []
    assert completed.returncode == 0, completed.stderr
    apps = json.loads((work / "output.json").read_text(encoding="utf-8"))["resources"]["apps"]
    environ = {e["name"]: e["value"] for e in _load(tmp_path / "app.yaml")["env"]}
    assert environ["DBXDEC_TARGET"] == "dev"  # written by the load, for its target
    assert _generate(tmp_path, capsys, "-t", "dev")[0] == 0
    generated = _load(tmp_path / "resources" / "sales_backfills.app.yml")["resources"]["apps"]
    assert apps == {"sales_backfills": {**generated["sales_backfills"], "source_code_path": "."}}
    assert SchemaValidator(schema_path()).document_problems({"resources": {"apps": apps}}) == []
