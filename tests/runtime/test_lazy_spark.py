"""A task that neither reads nor writes through Spark runs without starting a JVM.

``dbxdec-run`` runs in a subprocess whose ``PATH`` starts with a stand-in ``java`` that
records that it was started and fails: a Spark-free task succeeds and the stand-in never
runs; a task that reads a table does start it (so the check can fail).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from databricks_bundle_decorators.definitions.contracts import LazySession, RunEnvironment

DBXDEC_RUN = Path(sys.executable).with_name("dbxdec-run")
HERE = Path(__file__).resolve().parent
SPARK_VARIABLES = ("DBXDEC_SPARK_MASTER", "JAVA_HOME", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS")


def _run(job: str, task: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run ``dbxdec-run`` for ``job``/``task`` with the stand-in ``java`` first on PATH;
    returns the process and the stand-in's marker file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "java-started"
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho started > '{marker}'\nexit 1\n")
    java.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in SPARK_VARIABLES}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")])),
        DBXDEC_WAREHOUSE=str(tmp_path / "warehouse"),
        DBXDEC_STATE_DIR=str(tmp_path / "state"),
        SPARK_FREE_OUT=str(tmp_path / "stamp"),
    )
    done = subprocess.run(
        [
            str(DBXDEC_RUN),
            f"--dbxdec_job={job}",
            f"--dbxdec_task={task}",
            "--dbxdec_module=spark_free_pipeline",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done, marker


def test_a_spark_free_task_runs_without_starting_java(tmp_path: Path) -> None:
    done, marker = _run("spark_free", "stamp", tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "stamp").read_text()  # the task ran
    assert not marker.exists()


def test_a_task_that_reads_a_table_starts_java(tmp_path: Path) -> None:
    """The check above can fail: a table read makes the session, which starts java."""
    done, marker = _run("reads_a_table", "peek", tmp_path)
    assert marker.exists(), done.stderr
    assert done.returncode == 1


def test_a_lazy_session_is_made_once_on_first_use(tmp_path: Path) -> None:
    made: list[str] = []
    session = LazySession(lambda: made.append("session") or "the session")
    environment = RunEnvironment(session, tmp_path)
    assert not session.started and made == []
    assert environment.spark == "the session"
    assert environment.spark == "the session"
    assert session.started and made == ["session"]


@pytest.mark.parametrize("given", ["a session", None])
def test_a_session_given_directly_is_used_as_is(tmp_path: Path, given: str | None) -> None:
    assert RunEnvironment(given, tmp_path).spark == given


def test_a_session_task_code_creates_itself_gets_delta() -> None:
    """Task code may create the session first (SparkSession.builder.getOrCreate()): the
    JVM PySpark launches then carries the Delta jars and settings all the same. Checked
    in a fresh interpreter, where no JVM runs yet."""
    probe = (
        "import os\n"
        "from databricks_bundle_decorators.runtime.session.spark import prepare_local_spark\n"
        "prepare_local_spark()\n"
        "print(os.environ.get('PYSPARK_SUBMIT_ARGS', ''))\n"
    )

    def submit_args(**extra: str) -> str:
        env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout.strip()

    args = submit_args()
    assert args.endswith(" pyspark-shell")
    assert "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in args
    assert "delta-spark_2.13-4.0.1.jar" in args
    # the user's own setting wins
    mine = "--master local[1] pyspark-shell"
    assert submit_args(PYSPARK_SUBMIT_ARGS=mine) == mine
