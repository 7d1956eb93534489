"""``dbxdec setup-spark``: make this machine ready for local runs (Java, PySpark with
delta-spark, and the Delta Lake jars in their cache outside the project)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import click

from ...errors import EnvironmentProblem
from ...runtime.session.delta_jars import (
    DELTA_JARS,
    DELTA_VERSION,
    cached_jars,
    ensure_delta_jars,
    jars_dir,
)
from ...runtime.session.spark import require_local_spark

JAVA_MISSING = (
    "java not found on PATH: PySpark needs a Java 17 (or newer) runtime, e.g. "
    "`sudo apt-get install openjdk-17-jre-headless`"
)


@dataclass(frozen=True, slots=True)
class LocalSparkReport:
    """What :func:`check_local_spark` found: ready parts, and one line per problem."""

    java: str | None
    packages: str | None
    jars: tuple[Path, ...]
    problems: tuple[str, ...] = field(default=())

    @property
    def ready(self) -> bool:
        return not self.problems


def check_local_spark(*, download: bool) -> LocalSparkReport:
    """Check Java, PySpark with delta-spark, and the Delta jars (fetched when
    ``download`` and missing). Every check runs, so one call lists every problem."""
    problems: list[str] = []
    java = shutil.which("java")
    if java is None:
        problems.append(JAVA_MISSING)
    packages: str | None = None
    try:
        require_local_spark()
        packages = f"PySpark {_version('pyspark')}, delta-spark {_version('delta-spark')}"
    except EnvironmentProblem as exc:
        problems.append(exc.render())
    jars: tuple[Path, ...] = ()
    try:
        jars = tuple(ensure_delta_jars(download=download))
    except EnvironmentProblem as exc:
        problems.append(exc.render())
    return LocalSparkReport(java, packages, jars, tuple(problems))


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "(version unknown)"


@click.command("setup-spark")
@click.option(
    "--check",
    is_flag=True,
    help="Only verify; download nothing. Exit 3 when something is missing.",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Print nothing when everything is ready already (downloads and problems still print).",
)
def setup_spark(check: bool, quiet: bool) -> None:
    """Make this machine ready for local runs (`--local`): fetch the Delta Lake jars and
    check Java, PySpark and delta-spark.

    Local runs write Delta tables like Databricks does, so the embedded Spark needs
    delta-spark's jars. They are downloaded once from Maven Central (checked against its
    SHA-1 files; `mvn dependency:copy` is tried when the download fails) into a cache
    outside any project, shared by every project on the machine.

    \b
    Cache folder: $DBXDEC_JARS_DIR, else $XDG_CACHE_HOME/dbxdec/jars,
                  else ~/.cache/dbxdec/jars
    Repository:   $DBXDEC_MAVEN_REPOSITORY (default https://repo1.maven.org/maven2)

    Offline machines: copy the two jars into the cache folder, then run
    `dbxdec setup-spark --check`. Prints one line per jar; each problem is one
    `Error:` line, and the exit status is 3 when anything is missing.
    """
    folder = jars_dir()
    fetching = not check and cached_jars(folder) is None
    if fetching:
        names = ", ".join(jar.file_name for jar in DELTA_JARS)
        click.echo(f"Downloading the Delta Lake {DELTA_VERSION} jars ({names}) into {folder} ...")
    report = check_local_spark(download=not check)
    if quiet and report.ready and not fetching:
        return  # `make demo` and `make test` run this every time: silent when nothing to do
    if report.java is not None:
        click.echo(f"java        {report.java}")
    if report.packages is not None:
        click.echo(f"packages    {report.packages}")
    for jar in report.jars:
        click.echo(f"Delta jar   {jar}")
    for problem in report.problems:
        click.echo(f"Error: {problem}", err=True)
    if not report.ready:
        raise click.exceptions.Exit(EnvironmentProblem.exit_code)
    click.echo("Local Spark with Delta Lake is ready.")


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    group.add_command(setup_spark)
