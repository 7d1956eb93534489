"""[tool.dbxdec] settings per target (bundle/options.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.bundle.options import options_from_config
from databricks_bundle_decorators.bundle.project import ProjectConfig
from databricks_bundle_decorators.errors import UsageError


def _config(settings: dict[str, Any], distribution: str | None = "my-proj") -> ProjectConfig:
    return ProjectConfig(
        root=Path("/p"),
        pipelines=("x",),
        warehouse=Path("/p/.dbxdec/warehouse"),
        settings=settings,
        distribution=distribution,
    )


def test_defaults_come_from_the_distribution_name() -> None:
    options = options_from_config(_config({}))
    assert options.package_name == "my-proj"
    assert options.wheel == "./dist/*.whl"
    assert options.environment_version == "3"
    assert not options.pause_schedules


def test_a_target_table_overrides_and_merges() -> None:
    settings = {
        "params": {"catalog": "main", "region": "eu"},
        "tags": {"team": "data"},
        "targets": {
            "dev": {"pause_schedules": True, "params": {"catalog": "dev"}, "tags": {"env": "dev"}}
        },
    }
    dev = options_from_config(_config(settings), target="dev")
    assert dev.pause_schedules
    assert dict(dev.params) == {"catalog": "dev", "region": "eu"}
    assert dict(dev.tags) == {"team": "data", "env": "dev"}
    prod = options_from_config(_config(settings), target="prod")
    assert dict(prod.params) == {"catalog": "main", "region": "eu"}
    assert not prod.pause_schedules


def test_settings_take_bundle_variable_values() -> None:
    settings = {"params": {"catalog": "${var.catalog}"}, "pause_schedules": "${var.paused}"}
    options = options_from_config(
        _config(settings), target="dev", variables={"catalog": "dev", "paused": "true"}
    )
    assert dict(options.params) == {"catalog": "dev"}
    assert options.pause_schedules


@pytest.mark.parametrize(
    ("wheel", "prefix", "expected"),
    [
        ("dist/*.whl", "../", "../dist/*.whl"),
        ("./dist/*.whl", "./", "./dist/*.whl"),
        ("/Volumes/main/libs/pkg.whl", "../", "/Volumes/main/libs/pkg.whl"),
    ],
)
def test_relative_wheels_are_relative_to_the_file_holding_the_job(
    wheel: str, prefix: str, expected: str
) -> None:
    assert options_from_config(_config({"wheel": wheel}), wheel_prefix=prefix).wheel == expected


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"targets": {"dev": {"pipelines": ["x"]}}}, "unknown setting 'pipelines'"),
        ({"pause_schedules": "sometimes"}, "pause_schedules must be true or false"),
        ({"params": ["a"]}, "params must be a table"),
    ],
)
def test_bad_settings_are_usage_errors(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        options_from_config(_config(settings), target="dev")
