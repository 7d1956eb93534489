"""The oldest compute dbxdec supports: serverless environment 2 (Databricks Connect 15.4) and
Databricks Runtime 15.4 LTS; ``dbxdec generate`` refuses older. Sources:
https://docs.databricks.com/aws/en/release-notes/serverless/environment-version, .../runtime/"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FLOOR_ENVIRONMENT_VERSION = 2
FLOOR_RUNTIME = (15, 4)
FLOOR_CONNECT_VERSION = "15.4.5"
"""The Databricks Connect release of serverless environment 2."""

_ENVIRONMENT = re.compile(r"(\d+)(?:-[A-Za-z0-9-]+)?")
# Clusters API SparkVersion keys, e.g. "8.2.x-scala2.12" or "15.4.x-photon-scala2.12"
# (https://docs.databricks.com/api/clusters/v2/spark-version): "major.feature." is read.
_RUNTIME = re.compile(r"(\d+)\.(\d+)\.[^.]")


def environment_below_floor(version: str) -> bool:
    """Whether a serverless ``environment_version`` is older than the floor.

    Example:
        >>> environment_below_floor("1"), environment_below_floor("2")
        (True, False)
        >>> environment_below_floor("4-scala-preview"), environment_below_floor("${var.env}")
        (False, False)
    """
    match = _ENVIRONMENT.fullmatch(version.strip())
    return match is not None and int(match.group(1)) < FLOOR_ENVIRONMENT_VERSION


def runtime_below_floor(spark_version: str) -> bool:
    """Whether a cluster's ``spark_version`` is a Databricks Runtime older than the floor.

    Example:
        >>> runtime_below_floor("14.3.x-scala2.12"), runtime_below_floor("15.4.x-scala2.12")
        (True, False)
        >>> runtime_below_floor("16.4.x-photon-scala2.12"), runtime_below_floor("custom:x")
        (False, False)
    """
    match = _RUNTIME.match(spark_version.strip())
    return match is not None and (int(match.group(1)), int(match.group(2))) < FLOOR_RUNTIME


def compute_floor_problem(cluster_spec: Mapping[str, Any] | None, environment: str) -> str | None:
    """Why a job's compute (its cluster's ``spark_version``, else the serverless
    ``environment``) is below the floor, in one line; ``None`` when it is not."""
    if cluster_spec is None:
        if not environment_below_floor(environment):
            return None
        return (
            f"environment_version {environment!r} is older than dbxdec supports: the oldest "
            f"is serverless environment {FLOOR_ENVIRONMENT_VERSION} (Databricks Connect "
            f"{FLOOR_CONNECT_VERSION.rpartition('.')[0]}); set environment_version = "
            f'"{FLOOR_ENVIRONMENT_VERSION}" or later in [tool.dbxdec]'
        )
    spark_version = cluster_spec.get("spark_version")
    if not isinstance(spark_version, str) or not runtime_below_floor(spark_version):
        return None
    major, feature = FLOOR_RUNTIME
    return (
        f"spark_version {spark_version!r} is older than dbxdec supports: the oldest is "
        f"Databricks Runtime {major}.{feature} LTS (e.g. spark_version="
        f"'{major}.{feature}.x-scala2.12')"
    )
