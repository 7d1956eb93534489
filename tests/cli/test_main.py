"""The ``dbxdec`` group (cli/main.py): each command's module is loaded when it is asked for."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
import pytest

from databricks_bundle_decorators.cli.commands.steer_commands import BackfillGroup
from databricks_bundle_decorators.cli.main import COMMAND_MODULES, LazyCommands, cli, main

MODULES = sorted({module for modules in COMMAND_MODULES.values() for module in modules})


def _registered_by(module: str) -> set[str]:
    group = click.Group("probe")
    if module == "steer_commands":  # it turns an existing `backfill` command into a group
        group.add_command(click.Command("backfill"))
    importlib.import_module(f"databricks_bundle_decorators.cli.commands.{module}").register(group)
    return set(group.commands)


@pytest.mark.parametrize("module", MODULES)
def test_the_command_map_names_what_each_module_registers(module: str) -> None:
    mapped = {name for name, modules in COMMAND_MODULES.items() if module in modules}
    assert _registered_by(module) == mapped


def test_every_command_is_listed_and_found() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMAND_MODULES)
    for name in COMMAND_MODULES:
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name


def test_backfill_is_the_steering_group_whichever_command_came_first() -> None:
    group = LazyCommands("dbxdec")
    ctx = click.Context(group)
    assert group.get_command(ctx, "catchup") is not None  # backfill_commands, no steering yet
    backfill = group.get_command(ctx, "backfill")
    assert isinstance(backfill, BackfillGroup) and "undo" in backfill.commands


def test_an_unknown_command_is_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["generat"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No such command 'generat'" in err[0], err


def test_a_bundle_command_does_not_load_the_launcher() -> None:
    """``dbxdec generate`` imports the bundle commands only, not the launcher's modules."""
    code = (
        "import json, sys\n"
        "import click\n"
        "from databricks_bundle_decorators.cli.main import cli\n"
        "assert cli.get_command(click.Context(cli), 'generate') is not None\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(done.stdout)
    assert "databricks_bundle_decorators.cli.commands.bundle_commands" in loaded
    launch = [name for name in loaded if name.startswith("databricks_bundle_decorators.launch")]
    assert "databricks_bundle_decorators.launch.launcher" not in launch, launch
