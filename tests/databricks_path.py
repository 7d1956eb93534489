"""The Databricks path: the modules of dbxdec that run inside a job on Databricks, where
serverless compute gives them a Spark Connect session. Defined once, here; the static
guards (tests/runtime/test_connect_guards.py, tests/runtime/test_serverless_rules.py)
read these modules.

Everything in ``definitions/``, ``backfill/`` and ``runtime/`` (what ``dbxdec-run`` imports
on a cluster) and the shipped example pipelines, but for the local-only modules below:
they run on the embedded local Spark and never on Databricks, so they may use what only
a classic session has.
"""

from __future__ import annotations

from pathlib import Path

import databricks_bundle_decorators

PACKAGE = "databricks_bundle_decorators"
SRC = Path(databricks_bundle_decorators.__file__).parent

PACKAGES: tuple[str, ...] = ("definitions", "backfill", "runtime", "examples")

LOCAL_ONLY_MODULES: dict[str, str] = {
    # module: why it never runs on Databricks
    f"{PACKAGE}.runtime.running.local": "the local DAG runner (dbxdec run --local, local backfills)",
    f"{PACKAGE}.runtime.session.spark_remote": "connects local runs to a Spark Connect server",
    f"{PACKAGE}.runtime.session.delta_jars": "fetches the embedded Spark's Delta jars",
    f"{PACKAGE}.runtime.session.jvm_stderr": "filters the embedded JVM's stderr",
    f"{PACKAGE}.runtime.storage.parquet": "parquet outputs are local folders only",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def databricks_path_modules() -> list[tuple[str, str]]:
    """``(module name, source text)`` of every Databricks-path module, sorted by name."""
    found = []
    for package in PACKAGES:
        for path in sorted((SRC / package).rglob("*.py")):
            name = module_name(path)
            if name not in LOCAL_ONLY_MODULES:
                found.append((name, path.read_text(encoding="utf-8")))
    return sorted(found)
