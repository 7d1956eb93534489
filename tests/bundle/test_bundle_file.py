"""Reading databricks.yml (bundle/bundle_file.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from databricks_bundle_decorators.bundle.bundle_file import read_bundle_file, resolve_variables
from databricks_bundle_decorators.errors import UsageError

from .projects import BUNDLE_YML


@pytest.fixture
def bundle_file(tmp_path: Path) -> Path:
    path = tmp_path / "databricks.yml"
    path.write_text(BUNDLE_YML.format(name="demo"), encoding="utf-8")
    return path


def test_targets_default_target_and_variables(bundle_file: Path) -> None:
    parsed = read_bundle_file(bundle_file)
    assert parsed.targets == ("dev", "prod")
    assert parsed.default_target == "dev"
    assert parsed.variables_for("dev") == {"catalog": "dev"}
    assert parsed.variables_for("prod") == {"catalog": "main"}
    assert parsed.uses_load_resources


def test_an_unknown_target_suggests_the_closest(bundle_file: Path) -> None:
    parsed = read_bundle_file(bundle_file)
    assert parsed.resolve_target(None) == "dev"
    assert parsed.resolve_target("prod") == "prod"
    with pytest.raises(
        UsageError,
        match=r"unknown target 'prdo' in databricks.yml. Did you mean 'prod'\? Targets: dev, prod",
    ):
        parsed.resolve_target("prdo")


def test_unreadable_yaml_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "databricks.yml"
    path.write_text("targets: [unclosed\n", encoding="utf-8")
    with pytest.raises(UsageError, match="cannot read"):
        read_bundle_file(path)


def test_resolve_variables_replaces_whole_references_only() -> None:
    values = {"catalog": "dev", "flag": True}
    assert resolve_variables(
        {"a": "${var.catalog}", "b": ["${var.flag}", "x_${var.catalog}"], "c": "${var.unknown}"},
        values,
    ) == {"a": "dev", "b": [True, "x_${var.catalog}"], "c": "${var.unknown}"}
