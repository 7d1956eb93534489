"""The controller job's names that ``dbxdec generate`` writes, the ``--detach`` launcher sends and
``dbxdec-controller`` reads (https://docs.databricks.com/aws/en/jobs/job-parameters,
https://docs.databricks.com/aws/en/jobs/dynamic-value-references); no credential is a parameter.
"""

from __future__ import annotations

import hashlib

CONTROLLER_JOB = "dbxdec_controller"
"""The name of the generated controller job (a target's name prefix may precede it)."""
CONTROLLER_TASK_KEY = "controller"
CONTROLLER_ENTRY_POINT = "dbxdec-controller"
BACKFILL_ID_PARAM = "backfill_id"
JOB_ID_PARAM = "job_id"
GENERATION_PARAM = "generation"
RUN_ID_PARAM = "run_id"
CONTROLLER_JOB_ID_PARAM = "controller_job_id"
HANDOVER_AFTER_PARAM = "handover_after"
"""Seconds a controller run launches before handing over (tests set it short)."""
CLAIM_TTL_PARAM = "claim_ttl"
"""Seconds the controller's claim lasts unrenewed (tests set it short)."""
DEFAULT_HANDOVER_AFTER = 3 * 3600.0
CONTROLLER_MAX_CONCURRENT_RUNS = 100


MAX_TOKEN = 64
"""The Jobs API's longest idempotency token (``run-now``: "at most 64 characters",
https://docs.databricks.com/api/workspace/jobs/runnow)."""


def controller_token(backfill_id: str, suffix: str) -> str:
    """``dbxdec-ctl-<backfill id>-<suffix>``; an id too long for the 64 characters of
    a token is replaced by a digest of it (the same id always gives the same token).

    Example:
        >>> controller_token("nightly-20240601T020000-1a2b", "u3")
        'dbxdec-ctl-nightly-20240601T020000-1a2b-u3'
        >>> long_id = "a_job_name_long_enough_to_pass_the_limit-20240601T020000-1a2b"
        >>> len(controller_token(long_id, "g12"))
        47
    """
    token = f"dbxdec-ctl-{backfill_id}-{suffix}"
    if len(token) <= MAX_TOKEN:
        return token
    digest = hashlib.sha256(backfill_id.encode()).hexdigest()[:32]
    return f"dbxdec-ctl-{digest}-{suffix}"


def handover_token(backfill_id: str, generation: int) -> str:
    """The ``run-now`` idempotency token starting generation ``generation`` of the controller
    of ``backfill_id``: a re-sent request or two handovers at once start one run.

    Example:
        >>> handover_token("sales-20240101-ab12", 2)
        'dbxdec-ctl-sales-20240101-ab12-g2'
    """
    return controller_token(backfill_id, f"g{generation}")
