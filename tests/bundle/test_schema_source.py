"""find_schema: --schema first, then the Databricks CLI (cached per version), else none."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.bundle import validate as schema_source
from databricks_bundle_decorators.bundle.validate import NO_SCHEMA, cache_dir, find_schema


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_cache_dir_follows_xdg_cache_home(tmp_path: Path) -> None:
    assert cache_dir() == tmp_path / "cache" / "dbxdec" / "bundle-schema"


def test_explicit_schema_wins_without_asking_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schema_source.shutil, "which", lambda name: pytest.fail("CLI asked"))
    source = find_schema(tmp_path / "s.json")
    assert source.path == tmp_path / "s.json"
    assert source.description.endswith(f"of --schema {tmp_path / 's.json'}")


def test_no_cli_means_no_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_source.shutil, "which", lambda name: None)
    assert find_schema(None) == schema_source.SchemaSource(None, NO_SCHEMA)


def test_a_hanging_cli_times_out_into_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def hang(command: list[str], **kwargs: Any) -> Any:
        seen.append(kwargs["timeout"])
        raise subprocess.TimeoutExpired(command, kwargs["timeout"])

    monkeypatch.setattr(schema_source.shutil, "which", lambda name: "/x/databricks")
    monkeypatch.setattr(schema_source.subprocess, "run", hang)
    source = find_schema(None)
    assert seen == [60.0]
    assert source.path is None
    assert source.warning is not None
    assert "'databricks --version' gave no answer within 60 s" in source.warning
    assert "\n" not in source.warning


def test_a_version_without_a_number_is_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    def answer(command: list[str], **kwargs: Any) -> Any:
        return subprocess.CompletedProcess(command, 0, "hello\n", "")

    monkeypatch.setattr(schema_source.shutil, "which", lambda name: "/x/databricks")
    monkeypatch.setattr(schema_source.subprocess, "run", answer)
    source = find_schema(None)
    assert source.path is None
    assert source.warning is not None and "printed no version" in source.warning
