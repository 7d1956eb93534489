"""The ``dbxdec`` command: one place maps errors to exit codes.

Exit codes: 0 success, 1 the work failed, 2 usage error, 3 broken environment (e.g. local
runs without the spark extra), 130 interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from .. import __version__
from ..errors import DbxdecError
from . import (
    backfill_commands,
    bundle_commands,
    report_commands,
    run_commands,
    setup_commands,
    undo_commands,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
      dbxdec backfill JOB --start A --end B
    """


bundle_commands.register(cli)
run_commands.register(cli)
backfill_commands.register(cli)
undo_commands.register(cli)  # `backfill` becomes a group: `backfill undo ID` beside it
report_commands.register(cli)
setup_commands.register(cli)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    try:
        cli.main(
            args=list(argv) if argv is not None else None, prog_name="dbxdec", standalone_mode=False
        )
    except click.exceptions.Exit as exc:
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
    sys.exit(0)
