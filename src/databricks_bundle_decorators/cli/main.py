"""The ``dbxdec`` command: one place maps errors to exit codes.

Every failure ends with one line on stderr (``Error: ...``, what is wrong and what to
do) and its exit code; a workspace or local-state failure never shows a traceback.

Exit codes (:data:`~databricks_bundle_decorators.errors.EXIT_CODES`)::

    0    success
    1    the work failed (a definition, a run, a slice of a backfill)
    2    usage error (an option, a name, missing configuration, a refused rerun)
    3    something to install (PySpark, Delta Lake jars, Java)
    4    the workspace rejected the credentials or a permission is missing
    5    workspace or --spark-remote server unreachable (closed port, DNS, timeout, not Databricks)
    6    local state unwritable or damaged (.dbxdec folder, full disk, ledger file)
    7    the backfill's claim on its keys was taken over by another launcher; it stopped
    130  interrupted (Ctrl-C); a backfill prints its --resume command
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any

import click

from .. import __version__
from ..errors import EXIT_CODES, DbxdecError

_EXIT_CODES_HELP = "\b\nExit codes:\n" + "\n".join(
    f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES.items()
)

COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(["init", "generate", "validate", "deploy", "wheel"], ("bundle_commands",)),
    **dict.fromkeys(["run", "setup-spark"], ("run_commands",)),
    "emulator": ("emulator_commands",),
    "app": ("app_commands",),
    "backfill": ("backfill_commands", "steer_commands"),  # steer makes it a group
    "catchup": ("backfill_commands",),
    **dict.fromkeys(["backfills", "status", "graph"], ("report_commands",)),
    "stale": ("stale_commands",),
    "restate": ("restate_commands",),
}
"""Each ``dbxdec`` command and the modules of :mod:`.commands` whose ``register`` adds it,
in order (``tests/cli/test_main.py`` checks the map against what they register)."""


class LazyCommands(click.Group):
    """The ``dbxdec`` group: a command's module is imported when the command is asked for,
    so ``dbxdec generate`` does not import the launcher (a third of its start-up)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._registered: set[str] = set()

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMAND_MODULES, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        for module in COMMAND_MODULES.get(cmd_name, ()):
            self.register(module)
        return super().get_command(ctx, cmd_name)

    def register(self, module: str) -> None:
        """Add the commands of ``.commands.<module>`` (once)."""
        if module not in self._registered:
            self._registered.add(module)
            importlib.import_module(f"{__package__}.commands.{module}").register(self)


@click.group(
    cls=LazyCommands,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_EXIT_CODES_HELP,
)
@click.version_option(__version__, prog_name="dbxdec")
def cli() -> None:
    """dbxdec: Spark pipelines as decorated Python, deployed as Databricks bundle jobs,
    run locally on an embedded Spark, and backfilled safely.

    \b
    Typical flow:
      dbxdec init my_project          scaffold a project
      dbxdec setup-spark              fetch the Delta jars for local runs
      dbxdec validate                 check definitions and generated jobs
      dbxdec run JOB --key K --local  run one slice on the local Spark
      dbxdec deploy -t dev            generate resources and deploy the bundle
    dbxdec emulator                 try -t dev here, without a workspace
      dbxdec backfill JOB --start A --end B
    """


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    _quiet_sdk_logging()
    try:
        cli.main(
            args=list(argv) if argv is not None else None, prog_name="dbxdec", standalone_mode=False
        )
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:  # one line, like every other error: no usage block
        message = _renamed_option(exc) or exc.format_message()
        where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        click.echo(f"Error: {message}{where}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except DbxdecError as exc:
        click.echo(f"Error: {exc.render()}", err=True)
        sys.exit(exc.exit_code)
    except Exception as exc:  # a workspace or disk failure the commands did not name
        from ..launch.ledger.place import os_problem
        from ..launch.workspace.workspace import environment_problem

        problem = environment_problem(exc) or os_problem(exc)
        if problem is None:
            raise
        click.echo(f"Error: {problem.render()}", err=True)
        sys.exit(problem.exit_code)
    sys.exit(0)


# options of the earlier databricks-bundle-decorators releases (click would suggest --rerun)
RENAMED_OPTIONS: dict[str, str] = {"--reverse": "--order reverse"}


def _renamed_option(exc: click.UsageError) -> str | None:
    if not isinstance(exc, click.NoSuchOption):
        return None
    replacement = RENAMED_OPTIONS.get(exc.option_name)
    if replacement is None:
        return None
    return f"No such option '{exc.option_name}': dbxdec takes '{replacement}' instead."


def _quiet_sdk_logging() -> None:
    """Keep the SDK's warnings off stderr: dbxdec says what matters in one line."""
    sdk = logging.getLogger("databricks.sdk")
    if not sdk.handlers:
        sdk.addHandler(logging.NullHandler())
        sdk.propagate = False
