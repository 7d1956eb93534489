"""Whether this environment can run slices locally (PySpark and Delta Lake), checked
before any local work so a missing extra is one line saying what to install.
"""

from __future__ import annotations

import importlib.util

from .errors import MissingSparkExtra

# The pair dbxdec's `spark` extra pins (pyproject.toml; tests/test_docs.py keeps them equal),
# named directly: dbxdec itself is not on the package index yet.
SPARK_EXTRA_INSTALL = 'pip install "pyspark==4.0.1" "delta-spark==4.0.1"'
LOCAL_SPARK_MODULES = ("pyspark", "delta")
"""Top-level modules local runs import: PySpark's, and delta-spark's (``delta``)."""

__all__ = ["MissingSparkExtra", "missing_local_spark_modules", "require_local_spark"]


def missing_local_spark_modules() -> list[str]:
    """The modules of :data:`LOCAL_SPARK_MODULES` that cannot be imported here."""
    return [name for name in LOCAL_SPARK_MODULES if importlib.util.find_spec(name) is None]


def require_local_spark() -> None:
    """Raise unless PySpark and Delta Lake are installed.

    Raises:
        MissingSparkExtra: one is missing; the message says what to install.
    """
    missing = missing_local_spark_modules()
    if missing:
        raise MissingSparkExtra(
            f"local runs need PySpark and Delta Lake ({' and '.join(missing)} not installed): "
            f"{SPARK_EXTRA_INSTALL}"
        )
