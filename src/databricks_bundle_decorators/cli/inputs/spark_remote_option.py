"""``--spark-remote sc://HOST:PORT``: local runs on a Spark Connect server instead of the
embedded Spark (``dbxdec run --local``, ``dbxdec backfill --local``, ``catchup --local``).

The option (or PySpark's own ``$SPARK_REMOTE``) is validated where it is read: a bad
address is a usage error (exit 2), a server that does not answer exits 5 at once, before
anything runs. The address then travels in ``$SPARK_REMOTE`` to the local runner, to the
``dbxdec-run`` processes it may start and to task code's own ``SparkSession.builder``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ...errors import UsageError
from ...runtime.session.spark_remote import SPARK_REMOTE_ENV, SparkRemote, require_connect_client

F = TypeVar("F", bound=Callable[..., Any])

HELP = (
    "Run the local runs on this Spark Connect server instead of the embedded Spark "
    "(env: SPARK_REMOTE). Tables keep their local warehouse paths, so the server must "
    "see this machine's filesystem at the same paths (e.g. a server started on this "
    "machine). Exit 5 when nothing answers there. Not for Databricks workspaces."
)


class SparkRemoteType(click.ParamType):  # type: ignore[type-arg]
    """An ``sc://HOST[:PORT]`` address, refused with one line naming the option."""

    name = "sc://HOST:PORT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, SparkRemote):
            return value
        try:
            return SparkRemote.parse(str(value).strip())
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


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
        type=SparkRemoteType(),
        envvar=SPARK_REMOTE_ENV,
        metavar="sc://HOST:PORT",
        help=HELP,
    )(wrapper)
    return decorated  # type: ignore[no-any-return]


def with_spark_remote(decorator: Callable[[F], F]) -> Callable[[F], F]:
    """``decorator`` (the options that carry ``--local``) followed by ``--spark-remote``."""
    return lambda fn: spark_remote_option(decorator(fn))


def use_spark_remote(remote: SparkRemote, *, local: bool, typed: bool) -> None:
    """Send this process's local runs to ``remote``, once it answers.

    Without ``--local`` the address from the environment is left alone (it is PySpark's
    variable, set for other uses too); typed on the command line it is refused.

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
