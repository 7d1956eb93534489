"""What serverless compute lets a job change in its Spark session, in one place.

Serverless compute documents a short list of settable Spark properties; nothing on the
Databricks path sets one off :data:`SETTABLE_CONFS`: what dbxdec needs travels as writer
options or is read back (``DESCRIBE HISTORY``). ``tests/conftest.py`` and
``tests/runtime/test_serverless_rules.py`` hold the rule.
"""

from __future__ import annotations

from typing import Any

SOURCES: tuple[str, ...] = (
    # "Configure Spark properties for serverless notebooks and jobs" (a section of "Set
    # Spark configuration properties on Databricks"): the list itself. Read 2026-11-24
    # through the docs index, whose excerpt showed the page and its section but not the
    # rows of the list; the names below are those of the release notes as copied in
    # dbxdec issue 24 (a secondary copy): re-check them against the page.
    "https://docs.databricks.com/en/spark/conf.html",
    # "Serverless compute limitations": only the supported Spark properties may be set.
    "https://docs.databricks.com/en/compute/serverless/limitations.html",
)
READ_ON = "2026-11-24"  # the list changes with serverless releases

# the Spark properties a serverless notebook or job may set (see SOURCES)
SETTABLE_CONFS: frozenset[str] = frozenset(
    {
        "spark.sql.session.timeZone",
        "spark.sql.shuffle.partitions",
        "spark.sql.ansi.enabled",
        "spark.sql.legacy.timeParserPolicy",
        "spark.sql.files.maxPartitionBytes",
        "spark.databricks.execution.timeout",
    }
)


class ServerlessConfError(RuntimeError):
    """A Spark property off :data:`SETTABLE_CONFS` was set on a Databricks-path session."""


def check_conf(name: str) -> None:
    """Raise ``ServerlessConfError`` when ``name`` is not on the documented list."""
    if name not in SETTABLE_CONFS:
        raise ServerlessConfError(
            f"Spark property {name!r} is not settable on serverless compute (settable: "
            f"{', '.join(sorted(SETTABLE_CONFS))}; read {READ_ON} from {SOURCES[0]}); pass it "
            "as a reader/writer option or set it only on a local session"
        )


def set_conf(spark: Any, name: str, value: str) -> None:
    """Set Spark property ``name`` on a session that may be a serverless one (the only
    ``conf.set`` on the Databricks path).

    Raises:
        ServerlessConfError: the property is not on the documented list.
    """
    check_conf(name)
    spark.conf.set(name, value)
