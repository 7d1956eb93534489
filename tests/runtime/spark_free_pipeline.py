"""Jobs for the lazy-Spark tests, in the default registry (``dbxdec-run`` imports the
module by name). The task writes ``time.time()`` to ``$SPARK_FREE_OUT`` when it starts."""

from __future__ import annotations

import os
import time

from databricks_bundle_decorators import job, task


@job
def spark_free() -> None:
    @task
    def stamp() -> None:
        with open(os.environ["SPARK_FREE_OUT"], "w", encoding="utf-8") as out:
            out.write(repr(time.time()))

    stamp()


@job
def reads_a_table() -> None:
    @task
    def peek() -> None:
        from databricks_bundle_decorators.io_managers import read_table

        read_table("main.lazy.events")

    peek()
