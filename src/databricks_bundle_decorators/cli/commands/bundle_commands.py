"""``dbxdec generate``, ``validate``, ``deploy``, ``init`` and ``wheel``: thin wrappers
over :mod:`databricks_bundle_decorators.bundle`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ... import __version__
from ...bundle.app_resource import is_app_file
from ...bundle.framework_wheel import WHEELS_DIR, write_framework_wheel
from ...bundle.project import find_root
from ...bundle.validate import find_schema
from ...bundle.workflows import (
    BundleValidationError,
    databricks_cli,
    deploy_project,
    generate_project,
    init_project,
    open_project,
    validate_project,
)
from ...errors import UsageError, counted
from ..inputs.options import pipelines_option

_TARGET_HELP = "Bundle target from databricks.yml (default: the target marked default)."


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


@click.command()
@pipelines_option
@click.option("-t", "--target", default=None, metavar="TARGET", help=_TARGET_HELP)
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for the job files (default: resources/ in the project).",
)
def generate(
    project: Path | None, pipelines: tuple[str, ...], target: str | None, out: Path | None
) -> None:
    """Write one YAML file per job: resources/<job>.job.yml (resources: jobs: <job>:).

    Output is deterministic: the same definitions give byte-identical files. Files
    dbxdec generated for jobs that no longer exist are removed. Nothing is written when
    a job has a problem.

    Use this when databricks.yml includes resources/*.yml instead of loading the jobs
    with databricks_bundle_decorators.bundle:load_resources.

    With [tool.dbxdec.app] in pyproject.toml, also writes the backfill app as a
    Databricks App: resources/<app>.app.yml, and app.yaml and requirements.txt at the
    project root (the app's source folder).
    """
    opened = open_project(project, pipelines, target)
    written = generate_project(opened, out)
    app = [path for path in written if is_app_file(opened.config.root, path)]
    jobs = [path for path in written if path not in app]
    where = _shown(out or opened.config.root / "resources")
    click.echo(f"Wrote {counted(len(jobs), 'job file')} to {where}")
    for path in jobs:
        click.echo(f"  {_shown(path)}")
    if app and opened.config.app is not None:
        click.echo(f"Wrote the Databricks App {opened.config.app.name!r}:")
        for path in app:
            click.echo(f"  {_shown(path)}")


@click.command()
@pipelines_option
@click.option("-t", "--target", default=None, metavar="TARGET", help=_TARGET_HELP)
@click.option(
    "--schema",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Bundle JSON schema to check the jobs against (wins over the Databricks CLI's). "
    "Without it, the output of 'databricks bundle schema' is used, cached per CLI version; "
    "with neither the schema check is skipped and the report says so.",
)
@click.option(
    "--as-service-principal",
    "service_principal",
    is_flag=True,
    help="A service principal deploys: a production target without its own "
    "workspace.root_path is then only a recommendation, as in the Databricks CLI.",
)
def validate(
    project: Path | None,
    pipelines: tuple[str, ...],
    target: str | None,
    schema: Path | None,
    service_principal: bool,
) -> None:
    """Check definitions and generated jobs; exit 1 when there are problems.

    \b
    Checks, each problem naming job, task and field:
      - the definitions (cycles, duplicate keys, bad arguments, reserved settings);
      - a strict typed load of each job (databricks.bundles.jobs.Job), as the
        Databricks CLI does: unknown or mistyped settings fail;
      - the official bundle JSON schema, when one is given or found;
      - ${var.x} references to variables that databricks.yml does not declare;
      - the target's mode rules, as the Databricks CLI applies them to a human
        deployer: a production target needs its own workspace.root_path (unless
        every job has run_as or --as-service-principal); at most 25 tags per job
        once presets and development mode's dev tag are added.
    """
    opened = open_project(project, pipelines, target)
    source = find_schema(schema)  # validate_project refuses a --schema that is no file
    if source.warning is not None:
        click.echo(source.warning, err=True)
    report = validate_project(opened, source.path, service_principal=service_principal)
    for problem in report.problems:
        click.echo(problem)
    if source.path is None and report.schema is not None:
        said = f"checked against the bundle schema of {_shown(report.schema)}"
    else:
        said = source.description
    checks = "definitions, typed load" + (", schema" if report.schema else "")
    if not report.ok:
        click.echo(said)
        raise BundleValidationError(
            f"{counted(len(report.problems), 'problem')} in {counted(report.jobs, 'job')} "
            f"({checks})"
        )
    click.echo(f"OK: {counted(report.jobs, 'job')} valid ({checks})")
    click.echo(said)


@click.command(context_settings={"ignore_unknown_options": True})
@pipelines_option
@click.option("-t", "--target", default=None, metavar="TARGET", help=_TARGET_HELP)
@click.option("-p", "--profile", default=None, help="Databricks CLI profile (~/.databrickscfg).")
@click.option(
    "--schema",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Bundle JSON schema to validate against first (see dbxdec validate).",
)
@click.option(
    "--warehouse-id",
    default=None,
    help="SQL warehouse that records table-triggered jobs' first watermarks (default: "
    "DATABRICKS_WAREHOUSE_ID).",
)
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def deploy(
    project: Path | None,
    pipelines: tuple[str, ...],
    target: str | None,
    profile: str | None,
    schema: Path | None,
    warehouse_id: str | None,
    extra: tuple[str, ...],
) -> None:
    """Validate, then deploy the bundle with the Databricks CLI (databricks bundle deploy).

    When databricks.yml does not load the jobs through load_resources, the YAML files
    are generated into resources/ first. The Databricks CLI's output and exit code are
    passed through; arguments after the options go to it unchanged
    (dbxdec deploy -t dev -- --force-lock).

    Before anything is deployed, the framework wheel ([tool.dbxdec] framework_wheel,
    default wheels/dbxdec-<version>-py3-none-any.whl) must exist and be this dbxdec's
    version; 'dbxdec wheel' writes it.

    Then each table-triggered job's first watermark (its sources' latest versions) is
    recorded in its state table through a SQL warehouse (--warehouse-id); without one,
    deploy says that the job's first triggered run needs --from-version.
    """
    opened = open_project(project, pipelines, target)  # an unknown target is named first
    executable = databricks_cli()
    deploy_project(opened, executable=executable, profile=profile, schema=schema, extra=extra)
    from ...launch.workspace.first_watermark import deploy_watermark_lines

    for line in deploy_watermark_lines(opened.jobs, warehouse_id=warehouse_id, profile=profile):
        click.echo(line)  # a table-triggered job's first watermark (or how to start it)


@click.command()
@click.argument("name")
@click.option("--serverless", is_flag=True, help="Tasks run on serverless compute (default).")
@click.option("--classic", is_flag=True, help="Tasks run on a job cluster.")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to create the project (default: ./NAME).",
)
@click.option("--force", is_flag=True, help="Overwrite files that exist already.")
def init(name: str, serverless: bool, classic: bool, directory: Path | None, force: bool) -> None:
    """Create project NAME: pyproject with [tool.dbxdec], databricks.yml (dev and prod
    targets), an example daily-partitioned pipeline and its tests, and this dbxdec's
    wheel in wheels/ (what the project's venv and its deployed jobs install).

    Existing files are never overwritten without --force.
    """
    if serverless and classic:  # two flags, not one choice: each would silently win
        raise UsageError("--serverless and --classic exclude each other: pass one of them")
    compute = "classic" if classic else "serverless"
    destination = directory or Path(name)
    written = init_project(
        destination,
        name,
        compute="classic" if compute == "classic" else "serverless",
        force=force,
        version=__version__,
    )
    click.echo(f"Created {name} ({compute}) in {_shown(destination)}: {len(written)} files")
    click.echo(
        f"Next: cd {_shown(destination)}, then follow README.md: pip install "
        f'{os.path.relpath(written[-1], destination)} && pip install -e ".[dev]" && pytest'
    )


@click.command()
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Folder for the wheel (default: {WHEELS_DIR}/ in the project).",
)
def wheel(out: Path | None) -> None:
    """Write this dbxdec's wheel: wheels/dbxdec-<version>-py3-none-any.whl.

    Run it in a project after upgrading dbxdec: deployed jobs install this wheel beside
    the project's, and dbxdec deploy refuses a wheel of another version. Then pin the
    same version in pyproject.toml (dependencies = ["dbxdec==<version>"]).

    The wheel is built from dbxdec's source folder when it was installed from one
    (pip install -e), copied when it was installed from a wheel file, and otherwise
    rebuilt from the installed files.
    """
    written = write_framework_wheel(out or find_root() / WHEELS_DIR)
    click.echo(f"Wrote {_shown(written)}")


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    for command in (generate, validate, deploy, init, wheel):
        group.add_command(command)
