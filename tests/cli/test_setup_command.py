"""``dbxdec setup-spark``: reports the cached Delta jars, or fails with one line (exit 3)
and leaves nothing half-downloaded behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from databricks_bundle_decorators.cli.main import cli
from databricks_bundle_decorators.runtime.session.delta_jars import (
    DELTA_JARS,
    JARS_DIR_ENV,
    MAVEN_REPOSITORY_ENV,
)

USER_CACHE = Path.home() / ".cache" / "dbxdec" / "jars"


def _errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Error:")]


@pytest.fixture
def path_without_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH holds only ``java`` (when this machine has one): no ``mvn`` to fall back on."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = shutil.which("java")
    if java is not None:
        (bin_dir / "java").symlink_to(java)
    monkeypatch.setenv("PATH", str(bin_dir))


def test_check_lists_the_cached_jars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not all((USER_CACHE / jar.file_name).is_file() for jar in DELTA_JARS):
        pytest.skip(f"the Delta jars are not cached in {USER_CACHE} (run `dbxdec setup-spark`)")
    cache = tmp_path / "jars"
    cache.mkdir()
    for jar in DELTA_JARS:
        (cache / jar.file_name).symlink_to(USER_CACHE / jar.file_name)
    monkeypatch.setenv(JARS_DIR_ENV, str(cache))
    monkeypatch.setenv(MAVEN_REPOSITORY_ENV, "http://127.0.0.1:9/maven2")  # never asked

    result = CliRunner().invoke(cli, ["setup-spark", "--check"])

    assert result.exit_code == 0, result.output
    assert _errors(result.output) == []
    for jar in DELTA_JARS:
        assert f"Delta jar   {cache / jar.file_name}" in result.output.splitlines()
    assert sorted(p.name for p in cache.iterdir()) == sorted(j.file_name for j in DELTA_JARS)


@pytest.mark.usefixtures("path_without_mvn")
def test_unreachable_repository_and_no_mvn_is_one_error_line_and_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("java") is None:
        pytest.skip("needs java on PATH, so that the jars are the only problem")
    cache = tmp_path / "jars"
    cache.mkdir()
    monkeypatch.setenv(JARS_DIR_ENV, str(cache))
    monkeypatch.setenv(MAVEN_REPOSITORY_ENV, "http://127.0.0.1:9/maven2")

    result = CliRunner().invoke(cli, ["setup-spark"])

    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    [error] = _errors(result.output)
    for jar in DELTA_JARS:
        assert jar.coordinate in error
    assert "`dbxdec setup-spark`" in error
    assert "mvn not found" in error
    assert list(cache.iterdir()) == []


def test_check_downloads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "jars"
    monkeypatch.setenv(JARS_DIR_ENV, str(cache))
    monkeypatch.setenv(MAVEN_REPOSITORY_ENV, "http://127.0.0.1:9/maven2")

    result = CliRunner().invoke(cli, ["setup-spark", "--check"])

    assert result.exit_code == 3, result.output
    assert any("downloads are off" in line for line in _errors(result.output))
    assert "Downloading" not in result.output
    assert not cache.exists()


def test_missing_java_is_its_own_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path / "jars"))

    result = CliRunner().invoke(cli, ["setup-spark", "--check"])

    assert result.exit_code == 3
    errors = _errors(result.output)
    assert len(errors) == 2
    assert errors[0].startswith("Error: java not found on PATH")
    assert "Delta Lake jars" in errors[1]


def test_help_names_the_cache_and_its_variable() -> None:
    result = CliRunner().invoke(cli, ["setup-spark", "--help"])
    assert result.exit_code == 0
    assert JARS_DIR_ENV in result.output
    assert "~/.cache/dbxdec/jars" in result.output


def test_quiet_prints_nothing_when_ready_and_the_problem_when_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make demo`` runs ``setup-spark --quiet`` every time (issue 25 item 10)."""
    if not all((USER_CACHE / jar.file_name).is_file() for jar in DELTA_JARS):
        pytest.skip(f"the Delta jars are not cached in {USER_CACHE} (run `dbxdec setup-spark`)")
    if shutil.which("java") is None:
        pytest.skip("needs java on PATH")
    cache = tmp_path / "jars"
    cache.mkdir()
    monkeypatch.setenv(JARS_DIR_ENV, str(cache))
    monkeypatch.setenv(MAVEN_REPOSITORY_ENV, "http://127.0.0.1:9/maven2")  # never reached
    missing = CliRunner().invoke(cli, ["setup-spark", "--check", "--quiet"])
    assert missing.exit_code == 3 and len(_errors(missing.output)) >= 1
    for jar in DELTA_JARS:
        (cache / jar.file_name).symlink_to(USER_CACHE / jar.file_name)
    ready = CliRunner().invoke(cli, ["setup-spark", "--quiet"])
    assert (ready.exit_code, ready.output) == (0, "")
