"""``dbxdec emulator``: try the Databricks path without a workspace.

The command starts :mod:`databricks_bundle_decorators.testing.local_workspace` as its own
program (``testing`` sits below ``cli``; the CLI never imports it). A serving emulator says
how to reach it in ``.dbxdec/emulator.json`` (mode 0600), read by ``dbxdec emulator --env``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click

from ...bundle.project import project_root
from ...errors import UsageError
from ..inputs.options import project_option

SERVER_MODULE = "databricks_bundle_decorators.testing.local_workspace"

STATE_FILE = Path(".dbxdec") / "emulator.json"


@dataclass(frozen=True, slots=True)
class EmulatorState:
    """A serving emulator: its address, its token and its process."""

    host: str
    token: str
    pid: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def export_line(self) -> str:
        return f"export DATABRICKS_HOST={self.host} DATABRICKS_TOKEN={self.token}"


def state_path(root: Path) -> Path:
    return root / STATE_FILE


def read_state(root: Path) -> EmulatorState | None:
    """The emulator serving the project at ``root``, or ``None`` (no file, an unreadable
    one, or its process is gone)."""
    try:
        found = json.loads(state_path(root).read_text(encoding="utf-8"))
        state = EmulatorState(str(found["host"]), str(found["token"]), int(found["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(state.pid, 0)  # signal 0: is it alive (and ours)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return state


@click.command()
@project_option
@click.option(
    "-t",
    "--target",
    default=None,
    metavar="TARGET",
    help="Deploy the jobs as this databricks.yml target would (default: the "
    "target marked default, e.g. dev: names '[dev <you>] JOB').",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Loopback port to listen on (0: a free one).",
)
@click.option(
    "--env",
    "env",
    is_flag=True,
    help="Print the export line of the emulator serving this project and exit; "
    'use it as: eval "$(dbxdec emulator --env)".',
)
def emulator(project: Path | None, target: str | None, port: int, env: bool) -> None:
    """Serve the Jobs API emulator on 127.0.0.1 for this project, until Ctrl-C.

    It deploys the project's jobs as 'databricks bundle deploy -t TARGET' would name them,
    and runs their task code on the local Spark (checks, presence, undo and reports work
    as on Databricks), writing the project's local warehouse. In another terminal,
    eval "$(dbxdec emulator --env)" points dbxdec at it; then use -t TARGET as with a
    workspace. See docs/guides/try-without-a-workspace.md.
    """
    root = project_root(project)
    if env:
        state = read_state(root)
        if state is None:
            raise UsageError(
                f"no emulator serves the project in {root}: start one with 'dbxdec emulator' "
                "(it serves until Ctrl-C)"
            )
        click.echo(state.export_line())
        return
    argv = [sys.executable, "-m", SERVER_MODULE, f"--root={root}", f"--port={port}"]
    if target is not None:
        argv.append(f"--target={target}")
    sys.stdout.flush()
    os.execv(sys.executable, argv)  # the server owns the terminal, Ctrl-C and the exit code


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    group.add_command(emulator)
