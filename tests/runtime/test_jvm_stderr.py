"""Issue 25 item 10: the local JVM's incubator warning is filtered from its stderr,
everything else it writes there still arrives."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from databricks_bundle_decorators.runtime.session.jvm_stderr import forward_lines


def test_only_the_incubator_line_is_dropped() -> None:
    written: list[bytes] = []
    source = io.BytesIO(
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        b"ERROR SparkContext: something real\nno newline at the end"
    )
    forward_lines(source, written.append)
    assert written == [b"ERROR SparkContext: something real\n", b"no newline at the end"]


def test_a_child_started_inside_the_block_writes_through_the_filter(tmp_path: Path) -> None:
    # a fresh interpreter, so pytest's own capture of descriptor 2 is not in the way
    script = tmp_path / "child.py"
    script.write_text(
        "import subprocess, sys\n"
        "from databricks_bundle_decorators.runtime.session.jvm_stderr import jvm_stderr_filtered\n"
        "with jvm_stderr_filtered():\n"
        "    child = subprocess.Popen([sys.executable, '-c', "
        "\"import sys; sys.stderr.write('WARNING: Using incubator modules: x\\\\nkept\\\\n')\"])\n"
        "sys.stderr.write('parent after\\n'); sys.stderr.flush()\n"
        "child.wait()\n"
        "import threading\n"  # the pump ends at the pipe's end: the child exited, block closed
        "[t.join(30) for t in threading.enumerate() if t.name == 'dbxdec-jvm-stderr']\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert b"incubator" not in done.stderr
    assert b"kept\n" in done.stderr and b"parent after\n" in done.stderr
