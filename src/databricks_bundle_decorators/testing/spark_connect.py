"""A local Spark Connect server with Delta Lake, for tests and local runs over Connect.

Serverless compute runs task code on a Spark Connect session; the pip PySpark ships the
server but not ``sbin/start-connect-server.sh``, so it is started as that script does,
with ``spark-submit --class``. It listens on 127.0.0.1 only: the server has no
authentication and binds every interface unless ``spark.connect.grpc.binding.address``
says otherwise (https://spark.apache.org/docs/latest/spark-connect-overview.html).

Example (not run: it starts a JVM)::

    with SparkConnectServer(tmp / "warehouse") as server:
        spark = SparkSession.builder.remote(server.url).getOrCreate()
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from ..errors import EnvironmentProblem
from ..runtime.session.delta_jars import ensure_delta_jars
from ..runtime.session.spark import LOCAL_SESSION_CONF, quiet_session_conf, require_local_spark

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
# PySpark client settings of this process that the server's JVM must not inherit
CLIENT_ENV = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_SUBMIT_ARGS")
START_TIMEOUT_SECONDS = 240.0  # a start takes 20-40 s on 2 idle cores


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class SparkConnectServer:
    """A Spark Connect server in a child JVM: Delta Lake, 127.0.0.1, a free port.

    Args:
        warehouse: The server's ``spark.sql.warehouse.dir`` (its managed tables).
        conf: More settings of the server's session (they override dbxdec's local ones).
        port: The port (default: a free one).
        log: Where the JVM writes its output (default: ``<warehouse>/../connect-server.log``).
    """

    def __init__(
        self,
        warehouse: Path,
        *,
        conf: Mapping[str, str] | None = None,
        port: int | None = None,
        log: Path | None = None,
    ) -> None:
        self.warehouse = warehouse
        self.port = port or free_port()
        self.log = log or warehouse.parent / "connect-server.log"
        self._conf = dict(conf or {})
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The ``sc://`` address a client connects to."""
        return f"sc://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """The ``spark-submit`` command line that starts the server."""
        jars = ",".join(str(path) for path in ensure_delta_jars())
        settings = quiet_session_conf(
            {
                **LOCAL_SESSION_CONF,
                "spark.sql.warehouse.dir": str(self.warehouse),
                "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(self.port),
                **self._conf,
            }
        )
        require_local_spark()
        import pyspark

        spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        command = [str(spark_submit), "--class", SERVER_CLASS, "--name", "dbxdec-connect"]
        command += ["--master", self._conf.get("spark.master", "local[2]"), "--jars", jars]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        return [*command, "spark-internal"]

    def start(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        """Start the JVM and wait until its gRPC port accepts a connection (bound only once
        its SparkSession is up).

        Raises:
            EnvironmentProblem: the JVM exited, or did not listen within ``timeout``;
                the message quotes the end of its log.
        """
        self.warehouse.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in CLIENT_ENV}
        with self.log.open("wb") as out:
            self._process = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # Ctrl-C in the terminal reaches the test runner only
            )
        deadline = time.monotonic() + timeout
        while not _port_open(self.port):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise EnvironmentProblem(
                    f"the Spark Connect server did not start on {self.url} "
                    f"({self._tail()}); its log: {self.log}"
                )
            time.sleep(0.2)  # a poll interval, not a wait for an outcome

    def stop(self) -> None:
        """Stop the JVM (terminate, then kill after 30 s); safe to call twice."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        # signal the JVM's process group, so a wrapper script's child cannot outlive it
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait()

    @property
    def running(self) -> bool:
        """Whether the JVM is alive."""
        return self._process is not None and self._process.poll() is None

    def _tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return lines[-1] if lines else "no output"

    def __enter__(self) -> SparkConnectServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        process.send_signal(signum)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
