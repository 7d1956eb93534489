"""The local JVM's stderr without the ``WARNING: Using incubator modules`` line every
Spark 4 start prints (Spark's launcher always passes ``--add-modules=jdk.incubator.vector``
and no JVM option silences it): while the session starts, descriptor 2 is a pipe that a
daemon thread copies to the real stderr, less that line.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import BinaryIO

INCUBATOR_WARNING = b"WARNING: Using incubator modules:"


def forward_lines(source: BinaryIO, write: Callable[[bytes], object]) -> None:
    """Copy ``source`` to ``write`` line by line, without the incubator warning."""
    for line in iter(source.readline, b""):
        if not line.startswith(INCUBATOR_WARNING):
            write(line)


@contextmanager
def jvm_stderr_filtered() -> Iterator[None]:
    """Within the block, a child process started (the JVM) writes its stderr through the
    filter, for its whole life."""
    try:
        saved = os.dup(2)
        read_end, write_end = os.pipe()
    except OSError:  # no descriptor 2, or out of descriptors: leave stderr alone
        yield
        return
    real = os.fdopen(saved, "wb", buffering=0)
    source = os.fdopen(read_end, "rb")

    def pump() -> None:
        with suppress(OSError):  # the real stderr went away: nothing left to say it to
            forward_lines(source, real.write)

    os.dup2(write_end, 2)
    threading.Thread(target=pump, name="dbxdec-jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        os.dup2(saved, 2)  # this process writes to the real stderr again
        os.close(write_end)  # the JVM keeps its own copy of the pipe's write end
