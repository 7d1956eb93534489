"""Local runs over a Spark Connect server instead of an embedded JVM (``--spark-remote``).

The server reads and writes the local warehouse's folders, so it must share this
machine's filesystem. The address is PySpark's own ``SPARK_REMOTE``, so task code's
``SparkSession.builder.getOrCreate()`` reaches the same server
(https://spark.apache.org/docs/latest/api/python/getting_started/quickstart_connect.html).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import threading
from dataclasses import dataclass
from typing import Any

from ...errors import EnvironmentProblem, WorkspaceUnreachable

SPARK_REMOTE_ENV = "SPARK_REMOTE"
# the port of an address that names none: Spark Connect's connection string format,
# https://github.com/apache/spark/blob/master/connector/connect/docs/client-connection-string.md
DEFAULT_PORT = 15002
PROBE_SECONDS = 5.0
CONNECT_EXTRA = 'pip install "pyspark[connect]==4.0.1" "delta-spark==4.0.1"'


class SparkRemoteUnreachable(WorkspaceUnreachable):
    """Nothing answers at the ``--spark-remote`` address (exit 5)."""


@dataclass(frozen=True, slots=True)
class SparkRemote:
    """A Spark Connect server's address, ``sc://HOST[:PORT][/;name=value...]`` (``url``:
    as given, its ``;`` parameters passed to PySpark as they are)."""

    host: str
    port: int
    url: str

    @classmethod
    def parse(cls, text: str) -> SparkRemote:
        """Validate an ``sc://`` address (its ``;`` parameters may hold a token: never echoed).

        Example:
            >>> SparkRemote.parse("sc://127.0.0.1:15002").port
            15002
            >>> SparkRemote.parse("sc://[::1]:443/;use_ssl=true").host
            '::1'

        Raises:
            ValueError: not ``sc://HOST[:PORT]``, optionally followed by ``/;params``.
        """
        shown = text.split(";", 1)[0]
        expected = (
            f"{shown!r} is not a Spark Connect address: expected sc://HOST:PORT, e.g. "
            f"sc://127.0.0.1:{DEFAULT_PORT}"
        )
        authority, _, rest = text.removeprefix("sc://").partition("/")
        if not text.startswith("sc://") or (rest and not rest.startswith(";")):
            raise ValueError(expected)
        host, colon, port_text = authority.rpartition(":")
        if not colon:
            host, port_text = authority, str(DEFAULT_PORT)
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]  # an IPv6 literal
        if not host or any(c in host for c in " /@?#[]") or not port_text.isdigit():
            raise ValueError(expected)
        port = int(port_text)
        if not 1 <= port <= 65535:
            raise ValueError(f"{shown!r}: port {port} is not between 1 and 65535")
        return cls(host, port, text)

    def probe(self, timeout: float = PROBE_SECONDS) -> None:
        """Fail at once when nothing accepts a TCP connection at the address (PySpark's
        client retries a closed port for minutes).

        Raises:
            SparkRemoteUnreachable: connection refused, unknown host or timeout.
        """
        try:
            with socket.create_connection((self.host, self.port), timeout=timeout):
                return
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
        raise SparkRemoteUnreachable(
            f"no Spark Connect server answers at sc://{self.host}:{self.port} ({why}); start "
            "one on this machine's filesystem, or drop --spark-remote (and SPARK_REMOTE) to "
            "run on the embedded Spark"
        )


def require_connect_client() -> None:
    """Fail in one line (``EnvironmentProblem``) when a package of PySpark's ``connect``
    extra is missing."""
    needed = {"grpc": "grpcio", "google.rpc": "grpcio-status", "pandas": "pandas"}
    needed["pyarrow"] = "pyarrow"
    missing = [package for module, package in needed.items() if not _importable(module)]
    if missing:
        raise EnvironmentProblem(
            f"--spark-remote needs PySpark's Spark Connect client ({', '.join(missing)} not "
            f"installed); run: {CONNECT_EXTRA}"
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package
        return False


def spark_remote() -> SparkRemote | None:
    """The address in ``$SPARK_REMOTE``, or ``None`` (the embedded Spark).

    Raises:
        ValueError: the variable holds no valid ``sc://`` address.
    """
    text = os.environ.get(SPARK_REMOTE_ENV, "").strip()
    return SparkRemote.parse(text) if text else None


_CONNECTING = threading.Lock()


def remote_spark_session(remote: SparkRemote, local_conf: dict[str, str]) -> Any:
    """A Spark Connect session to ``remote`` with the embedded session's SQL settings
    ``local_conf`` (it stands in for the embedded Spark); an active one is reused.

    Raises:
        SparkRemoteUnreachable: nothing answers at the address.
    """
    from pyspark.sql import SparkSession

    with _CONNECTING:
        active = SparkSession.getActiveSession()
        if active is not None and type(active).__module__.startswith("pyspark.sql.connect"):
            return active
        require_connect_client()
        remote.probe()
        session = SparkSession.builder.remote(remote.url).getOrCreate()
        for key, value in local_conf.items():
            session.conf.set(key, value)
        return session
