"""``dbxdec validate`` finds the bundle schema: --schema, the Databricks CLI (cached), or none."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from tests.bundle.projects import DAILY_PIPELINE, make_project, schema_path
from tests.cli.clirun import run

SMALL_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "resources": {
            "type": "object",
            "properties": {
                "jobs": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"max_concurrent_runs": {"type": "integer"}},
                    },
                }
            },
        }
    },
}


def _schema_text(tmp_path: Path) -> Path:
    real = schema_path()
    if real.is_file():
        return real
    small = tmp_path / "small_schema.json"
    small.write_text(json.dumps(SMALL_SCHEMA), encoding="utf-8")
    return small


def stand_in_cli(
    bin_dir: Path, calls: Path, schema: Path, version: str = "0.250.0", schema_exit: int = 0
) -> None:
    """A ``databricks`` that answers ``--version`` and ``bundle schema`` and logs each call."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "databricks"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"with open({str(calls)!r}, 'a') as f:\n"
        "    f.write(' '.join(sys.argv[1:]) + '\\n')\n"
        "if sys.argv[1:] == ['--version']:\n"
        f"    print('Databricks CLI v{version}')\n"
        "elif sys.argv[1:] == ['bundle', 'schema']:\n"
        f"    if {schema_exit}:\n"
        "        print('Error: boom', file=sys.stderr)\n"
        f"        sys.exit({schema_exit})\n"
        f"    sys.stdout.write(open({str(schema)!r}).read())\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated cache; PATH holds only the stand-in folder (absent until written)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    project = tmp_path / "project"
    project.mkdir()
    make_project(project, DAILY_PIPELINE)
    return project


def _calls(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_the_cli_schema_is_used_and_cached_per_version(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = tmp_path / "calls.txt"
    stand_in_cli(tmp_path / "bin", calls, _schema_text(tmp_path))
    code, out, err = run(["validate", "--project", str(env)], capsys)
    assert (code, err) == (0, "")
    assert "checked against the bundle schema of Databricks CLI v0.250.0\n" in out
    assert "(definitions, typed load, schema)" in out
    assert (tmp_path / "cache" / "dbxdec" / "bundle-schema" / "0.250.0.json").is_file()
    assert _calls(calls) == ["--version", "bundle schema"]

    code, out, _ = run(["validate", "--project", str(env)], capsys)
    assert code == 0
    assert "checked against the bundle schema of Databricks CLI v0.250.0 (cached)" in out
    assert _calls(calls) == ["--version", "bundle schema", "--version"]

    stand_in_cli(tmp_path / "bin", calls, _schema_text(tmp_path), version="0.251.0")
    code, out, _ = run(["validate", "--project", str(env)], capsys)
    assert code == 0
    assert "checked against the bundle schema of Databricks CLI v0.251.0\n" in out
    assert _calls(calls)[-2:] == ["--version", "bundle schema"]


def test_without_the_cli_schema_option_is_used(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = _schema_text(tmp_path)
    code, out, err = run(["validate", "--project", str(env), "--schema", str(schema)], capsys)
    assert (code, err) == (0, "")
    assert f"checked against the bundle schema of --schema {schema}" in out


def test_schema_option_wins_over_the_cli(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = tmp_path / "calls.txt"
    schema = _schema_text(tmp_path)
    stand_in_cli(tmp_path / "bin", calls, schema)
    code, out, _ = run(["validate", "--project", str(env), "--schema", str(schema)], capsys)
    assert code == 0
    assert f"of --schema {schema}" in out
    assert _calls(calls) == []


def test_neither_says_no_schema_was_at_hand(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["validate", "--project", str(env)], capsys)
    assert (code, err) == (0, "")
    assert (
        "no bundle schema at hand: install the Databricks CLI or pass --schema PATH; "
        "skipped the schema check"
    ) in out
    assert "(definitions, typed load)" in out


def test_a_failing_cli_gives_one_line_and_falls_back(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = tmp_path / "calls.txt"
    stand_in_cli(tmp_path / "bin", calls, _schema_text(tmp_path), schema_exit=3)
    code, out, err = run(["validate", "--project", str(env)], capsys)
    assert code == 0
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "'databricks bundle schema' exited with 3: Error: boom" in lines[0]
    assert "no bundle schema at hand" in out


def test_garbage_from_the_cli_falls_back(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("not json at all", encoding="utf-8")
    stand_in_cli(tmp_path / "bin", tmp_path / "calls.txt", garbage)
    code, _, err = run(["validate", "--project", str(env)], capsys)
    assert code == 0
    assert len(err.strip().splitlines()) == 1
    assert "printed no JSON" in err
    assert not (tmp_path / "cache" / "dbxdec" / "bundle-schema" / "0.250.0.json").exists()


def test_a_job_violating_the_cli_schema_is_reported(
    env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    strict = tmp_path / "strict.json"
    schema = dict(SMALL_SCHEMA)
    schema["properties"] = {
        "resources": {
            "type": "object",
            "properties": {
                "jobs": {
                    "type": "object",
                    "additionalProperties": {"type": "object", "required": ["no_such_setting"]},
                }
            },
        }
    }
    strict.write_text(json.dumps(schema), encoding="utf-8")
    stand_in_cli(tmp_path / "bin", tmp_path / "calls.txt", strict)
    code, out, err = run(["validate", "--project", str(env)], capsys)
    assert code == 1
    assert "'no_such_setting' is a required property" in out
    assert "Databricks CLI v0.250.0" in out
    assert "Traceback" not in err
