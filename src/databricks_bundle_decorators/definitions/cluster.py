"""Reusable job-cluster configurations."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

_CLUSTER_KEY = re.compile(r"[A-Za-z0-9_\-]{1,100}")


@dataclass(frozen=True, slots=True)
class JobCluster:
    """An ephemeral cluster created for a job run and shared by its tasks.

    ``spec`` holds Databricks ``new_cluster`` fields (``spark_version``,
    ``node_type_id``, ``num_workers``, ``autoscale``, ...), passed through unchanged.
    """

    name: str
    spec: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or _CLUSTER_KEY.fullmatch(self.name) is None:
            raise ValueError(
                f"job cluster name {self.name!r} is invalid: expected 1-100 characters "
                "from A-Z a-z 0-9 _ -"
            )
        object.__setattr__(self, "spec", MappingProxyType(dict(self.spec)))


def job_cluster(name: str, **spec: Any) -> JobCluster:
    """Declare a job cluster to pass to ``@job(cluster=...)``.

    Example:
        >>> small = job_cluster("small", spark_version="16.4.x-scala2.12",
        ...                     node_type_id="Standard_E8ds_v4", num_workers=1)
    """
    return JobCluster(name, spec)
