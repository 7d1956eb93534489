"""Options shared by several commands and the parsing of their values (errors name the
option): keys, tasks, parameters, batch sizes, durations, pacing, the connection,
``--spark-remote``, ``--canary``/``--diff-gate`` and ``--all``."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ...bundle.project import ProjectConfig, load_project_for_job
from ...bundle.project import load_project as load_project
from ...definitions import Registry
from ...errors import UsageError, counted
from ...launch.backends.diff_gate import parse_diff_gate
from ...launch.plan.options import LOCAL_CONCURRENT, Pacing, default_of
from ...launch.plan.request import BackfillRequest, Connection, full_range_runs
from ...runtime.session.spark_remote import SPARK_REMOTE_ENV, SparkRemote, require_connect_client

F = TypeVar("F", bound=Callable[..., Any])


no_checks_option = click.option(
    "--no-checks",
    is_flag=True,
    help="Skip the tasks' per-slice checks in every run (in each run's dbxdec_order): "
    "a failing check does not fail a slice and no check results are recorded. The ledger, "
    "dbxdec status and the summary say so. Kept for --resume.",
)


def option_group(*options: Callable[[F], F]) -> Callable[[F], F]:
    """``options`` as one decorator, the first one first in ``--help``."""

    def decorate(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


project_option = click.option(
    "--project",
    "project",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Project directory (default: nearest with pyproject.toml or databricks.yml).",
)
pipelines_option = option_group(
    project_option,
    click.option(
        "--pipelines",
        "pipelines",
        multiple=True,
        metavar="MODULE",
        help="Module or package defining jobs (repeatable). Default: [tool.dbxdec] pipelines.",
    ),
)


if TYPE_CHECKING:  # click's ParamType is generic for type checkers (not at run time in 8.1)
    _KeysType = click.ParamType[tuple[str, ...], Any]
    _PairType = click.ParamType[tuple[str, str], Any]
    _SizeType = click.ParamType[int | str, Any]
    _SecondsType = click.ParamType[float, Any]
    _ParsedType = click.ParamType[Any, Any]
else:
    _KeysType = _PairType = _SizeType = _SecondsType = _ParsedType = click.ParamType


class KeyList(_KeysType):
    """``--keys K1,K2``: a comma-separated list of keys, as a tuple.

    >>> KeyList().convert(" 2024-01-01, 2024-01-03 ,", None, None)
    ('2024-01-01', '2024-01-03')
    """

    name = "K1,K2"
    example = "keys, e.g. 2024-01-01,2024-01-03"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        keys = tuple(key.strip() for key in str(value).split(",") if key.strip())
        if not keys:
            self.fail(f"expected a comma-separated list of {self.example}")
        return keys


class TaskList(KeyList):
    """``--tasks T1,T2``: a comma-separated list of task keys.

    >>> TaskList().convert("clean, load", None, None)
    ('clean', 'load')
    """

    name = "T1,T2"
    example = "task keys, e.g. clean,load"


task_options = option_group(
    click.option(
        "--tasks",
        type=TaskList(),
        default=(),
        help="Run only these tasks (comma-separated) for each key: on Databricks via "
        "run-now's only, locally likewise. Their inputs from tasks that do not run are read "
        "from those tasks' tables for the same keys; a key missing there fails its run "
        "before the task runs. Kept for --resume.",
    ),
    click.option(
        "--skip-tasks",
        type=TaskList(),
        default=(),
        help="Run every task but these (comma-separated). As --tasks, the others' "
        "tables are read and must hold the keys.",
    ),
)


class Assignment(_PairType):
    """``--param NAME=VALUE`` as a ``(name, value)`` pair.

    >>> Assignment().convert("region=eu=west", None, None)
    ('region', 'eu=west')
    """

    name = "NAME=VALUE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        name, sep, rest = str(value).partition("=")
        if not sep or not name:
            self.fail(f"{value!r}: expected NAME=VALUE")
        return (name, rest)


class BatchSizeType(_SizeType):
    """``--batch-size N|auto``: a number of keys per run from 1, or ``"auto"``.

    >>> BatchSizeType().convert("7", None, None), BatchSizeType().convert("AUTO", None, None)
    (7, 'auto')
    """

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            size = value
        elif str(value).strip().lower() == "auto":
            return "auto"
        else:
            try:
                size = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r}: expected a whole number of keys from 1, or auto")
        if size < 1:
            self.fail(f"{size}: expected a whole number of keys from 1, or auto")
        return size


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


class Duration(_SecondsType):
    """A positive duration in s, m or h, as seconds.

    >>> Duration().convert("15m", None, None), Duration().convert("1.5h", None, None)
    (900.0, 5400.0)
    """

    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            return value
        text = str(value).strip().lower()
        unit = _UNITS.get(text[-1:])
        try:
            seconds = float(text[:-1]) * unit if unit is not None else -1.0
        except ValueError:
            seconds = -1.0
        if not 0 < seconds < float("inf"):
            self.fail(f"{value!r}: expected a positive duration such as 90s, 15m or 1h")
        return seconds


def batch_size_options(what: str) -> Callable[[F], F]:
    """``--batch-size N|auto`` (``what`` says what N is) and ``--target-run-length``."""
    return option_group(
        click.option(
            "--batch-size",
            type=BatchSizeType(),
            metavar="N|auto",
            default=1,
            show_default=True,
            help=f"{what} auto: chosen from the job's past run durations (a start-up cost "
            "per run plus a cost per key, fitted to the runs) for runs of about "
            "--target-run-length, never so large that a --max-concurrent slot idles; chosen "
            "again as runs end. --dry-run shows the choice and why.",
        ),
        click.option(
            "--target-run-length",
            type=Duration(),
            metavar="DURATION",
            help="With --batch-size auto: the run length to aim at, e.g. 90s, 15m, 1h "
            f"[default: {default_of('target_run_seconds') / 60:g}m].",
        ),
    )


def target_seconds(batch_size: int | str, target: float | None) -> float:
    """The run length ``--batch-size auto`` aims at (refused without it)."""
    if target is not None and batch_size != "auto":
        raise UsageError("--target-run-length is the aim of --batch-size auto: add it")
    return float(default_of("target_run_seconds")) if target is None else target


def param_option(fn: F) -> F:
    return click.option(
        "--param",
        "params",
        multiple=True,
        type=Assignment(),
        metavar="NAME=VALUE",
        help="Job parameter (repeatable; a repeated name: the last wins).",
    )(fn)


def option_record(
    into: str, build: Callable[..., Any], *options: Callable[[F], F]
) -> Callable[[F], F]:
    """click ``options`` whose values reach the command as one argument ``into``:
    ``build(**values)``."""
    probe: Any = lambda: None  # noqa: E731 - collects the options' parameter names
    for option in options:
        probe = option(probe)
    names = [param.name for param in probe.__click_params__]

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            return fn(*args, **{into: build(**values)}, **kwargs)

        decorated: Any = wrapper
        for option in reversed(options):
            decorated = option(decorated)
        return decorated  # type: ignore[no-any-return]

    return decorate


def given_on_command_line(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    """Which of the parameters ``names`` the user typed (not defaults), as option flags."""
    typed = [
        name
        for name in names
        if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE
    ]
    flags = {p.name: p.opts[0] for p in ctx.command.params}
    return [flags.get(name, name) for name in typed]


def connection_record(
    local_help: str | None,
    target_help: str = "Bundle target (databricks.yml) the job was deployed to; resolves "
    "development-mode name prefixes such as '[dev jane] '.",
) -> Callable[[F], F]:
    """``--local`` (``local_help``; none without it), ``-t/--target``, ``--job-id``,
    ``--profile`` and ``--host``, reaching the command as one :class:`Connection`
    argument ``connection``."""
    local = [click.option("--local", is_flag=True, help=local_help)] if local_help else []
    return option_record(
        "connection",
        Connection,
        *local,
        click.option("-t", "--target", metavar="TARGET", help=target_help),
        click.option(
            "--job-id", type=click.IntRange(min=1), help="Deployed job id (skips the lookup)."
        ),
        click.option("--profile", help="~/.databrickscfg profile (default: environment)."),
        click.option("--host", help="Workspace URL (default: DATABRICKS_HOST or profile)."),
    )


def local_connection_record(local_help: str) -> Callable[[F], F]:
    """:func:`connection_record` plus ``--spark-remote``."""
    record = connection_record(local_help)
    return lambda fn: spark_remote_option(record(fn))


with_pacing = option_record(
    "pacing",
    Pacing,
    click.option(
        "--max-concurrent",
        type=click.IntRange(min=1, max=1000),
        help=f"Runs in flight at most [default: {default_of('max_concurrent')}; "
        f"{LOCAL_CONCURRENT} with --local].",
    ),
    click.option(
        "--retries",
        type=click.IntRange(min=0),
        help=f"Extra attempts per run after a failure [default: {default_of('retries')}].",
    ),
    click.option(
        "--retry-delay",
        type=click.FloatRange(min=0),
        help="Seconds before the first retry, doubling each time "
        f"[default: {default_of('retry_delay'):g}].",
    ),
    click.option(
        "--retry-for",
        type=Duration(),
        metavar="DURATION",
        help="With --retries: a run is retried only if the retry, back-off included, starts "
        "within DURATION (e.g. 90s, 10m, 2h) of the key's first attempt; the key stops "
        "retrying when either budget is spent [default: no limit].",
    ),
    click.option("--halt-on-error", is_flag=True, help="Launch nothing new once a run has failed."),
    click.option(
        "--poll-interval",
        type=click.FloatRange(min=0.005),
        default=default_of("poll_interval"),
        show_default=True,
        help="Longest gap in seconds between status polls while runs are due to end (shorter "
        "runs are polled sooner).",
    ),
    click.option(
        "--resend-after",
        type=click.FloatRange(min=0),
        metavar="SECONDS",
        help="A submission or status poll not answered within SECONDS (e.g. held by a 429 "
        "the client waits out) is sent once more; the same idempotency token finds the "
        "same run. 0: never [default: three times the usual answer time, at least 0.1 s].",
    ),
)


class _Parsed(_ParsedType):
    """A text parsed by ``parse``, whose ``ValueError`` is the option's error."""

    def __init__(self, name: str, parse: Callable[[str], Any]) -> None:
        self.name, self.parse = name, parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self.parse(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


diff_gate_option = click.option(
    "--diff-gate",
    type=_Parsed("PCT", parse_diff_gate),
    default=None,
    metavar="PCT",
    help="With --canary: after each canary run, compare each of its keys' row count, and "
    "the aggregates its tables declare (gate=[Sum(...)]), with the table before the "
    "backfill (Delta time travel) and stop before the rest when one moved by more than PCT "
    "(e.g. 10%). A key with no rows before is reported, not gated. On Databricks a run of "
    "the job (dbxdec_order) measures them.",
)

canary_option = click.option(
    "--canary",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Run the first N runs alone (up to --max-concurrent at once) and launch the rest "
    "only if all N succeed, their checks included; if one fails, nothing else is "
    "launched (--resume continues). 0: off.",
)


SPARK_REMOTE_HELP = (
    "Run the local runs on this Spark Connect server instead of the embedded Spark "
    "(env: SPARK_REMOTE). Tables keep their local warehouse paths, so the server must "
    "see this machine's filesystem at the same paths (e.g. a server started on this "
    "machine). Exit 5 when nothing answers there. Not for Databricks workspaces."
)


def spark_remote_option(fn: F) -> F:
    """Add ``--spark-remote`` to a command that has ``--local`` (a ``local`` argument or a
    ``connection`` record); the command itself never sees the option."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        remote: SparkRemote | None = kwargs.pop("spark_remote")
        connection = kwargs.get("connection")
        local = bool(kwargs.get("local", connection is not None and connection.local))
        if remote is not None:
            use_spark_remote(remote, local=local, typed=_typed())
        return fn(*args, **kwargs)

    decorated: Any = click.option(
        "--spark-remote",
        "spark_remote",
        type=_Parsed("sc://HOST:PORT", lambda text: SparkRemote.parse(text.strip())),
        envvar=SPARK_REMOTE_ENV,
        metavar="sc://HOST:PORT",
        help=SPARK_REMOTE_HELP,
    )(wrapper)
    return decorated  # type: ignore[no-any-return]


def use_spark_remote(remote: SparkRemote, *, local: bool, typed: bool) -> None:
    """Send this process's local runs to ``remote``, once it answers. Without ``--local``
    an address from the environment is left alone (PySpark's variable); typed, refused.

    Raises:
        UsageError: ``--spark-remote`` typed without ``--local``.
        EnvironmentProblem: PySpark's Connect client is not installed (exit 3).
        SparkRemoteUnreachable: nothing answers at the address (exit 5).
    """
    if not local:
        if typed:
            raise UsageError(
                "--spark-remote runs local runs on a Spark Connect server: add --local "
                "(on Databricks, runs use the job's own compute)"
            )
        return
    require_connect_client()
    remote.probe()
    os.environ[SPARK_REMOTE_ENV] = remote.url


def _typed() -> bool:
    context = click.get_current_context(silent=True)
    if context is None:
        return True
    source = context.get_parameter_source("spark_remote")
    return source == click.core.ParameterSource.COMMANDLINE


all_keys_option = click.option(
    "--all",
    "all_keys",
    is_flag=True,
    help="With no --start/--end and no --keys: launch every key of the definition. "
    "Without it a terminal asks first (saying how many runs) and elsewhere the backfill "
    "is refused; --dry-run plans every key without it.",
)


def confirm_every_key(registry: Registry, request: BackfillRequest) -> None:
    """Ask before ``request`` launches every key of its definition (issue 25); without a
    terminal to ask on, refuse in one line.

    Raises:
        UsageError: no terminal, and the request names no keys.
        click.exceptions.Abort: the user said no (exit 130, as other confirmations).
    """
    runs = full_range_runs(registry, request)
    if runs is None:
        return
    what = f"every key of {request.job}'s backfill definition, {runs} run{'s' * (runs != 1)}"
    if request.batch_size == "auto":
        what = f"every key of {request.job}'s backfill definition ({counted(runs, 'key')})"
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(f"no range given, which means {what}: pass --start/--end, --keys or --all")
    click.confirm(f"No range given: launch {what}?", abort=True, err=True)


def load_for_job(
    project: Path | None, pipelines: Sequence[str], job: str
) -> tuple[ProjectConfig, Registry]:
    """The project for a command about ``job``: a pipeline module that fails to import
    leaves its jobs out with one warning line each on stderr, so commands about the
    others go on (``dbxdec validate`` and ``generate`` still refuse it).

    Raises:
        PipelineImportError: ``job`` is not defined by the modules that imported.
    """
    config, registry, failures = load_project_for_job(project, pipelines, job)
    for failure in failures:
        click.echo(
            f"warning: left out, as it failed to import: {failure} (dbxdec validate shows it)",
            err=True,
        )
    return config, registry
