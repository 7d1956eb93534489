"""The job and task parameters dbxdec's jobs declare: names, defaults, key ranges and the
run's logical time as they encode them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from types import MappingProxyType
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# -- job parameters of a job with a backfill definition ---------------------------------

BACKFILL_KEY_PARAM = "backfill_key"
BACKFILL_START_KEY_PARAM = "backfill_start_key"
BACKFILL_EXACT_PARAM = "backfill_exact"
BACKFILL_RUN_TIME_PARAM = "backfill_run_time"
"""The run's logical time: keys are derived from it when ``backfill_key`` is empty."""
RUN_TIME_DEFAULT = "{{job.trigger.time.timestamp_ms}}"
"""The trigger time in epoch milliseconds: a repair or retry resolves the first attempt's keys."""
ORDER_PARAM = "dbxdec_order"
"""Empty, except in runs the launcher starts: then an order (:mod:`.order`)."""
NAIVE_RUN_TIME_ZONE = "UTC"
"""The zone of an ISO ``backfill_run_time`` without offset (``{{backfill.iso_datetime}}``)."""

BACKFILL_PARAMS: tuple[str, ...] = (
    BACKFILL_KEY_PARAM,
    BACKFILL_START_KEY_PARAM,
    BACKFILL_EXACT_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    ORDER_PARAM,
)
BACKFILL_PARAM_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        BACKFILL_KEY_PARAM: "",
        BACKFILL_START_KEY_PARAM: "",
        BACKFILL_EXACT_PARAM: "false",
        BACKFILL_RUN_TIME_PARAM: RUN_TIME_DEFAULT,
        ORDER_PARAM: "",
    }
)
"""Every backfill job parameter and its default, in the order jobs declare them."""

ENTRY_POINT = "dbxdec-run"
JOB_PARAM = "dbxdec_job"
TASK_PARAM = "dbxdec_task"
MODULE_PARAM = "dbxdec_module"
FOR_EACH_INPUT_PARAM = "dbxdec_input"
"""Named parameter of a for-each iteration: the element, as ``{{input}}``."""
FOR_EACH_INPUT_VALUE = "{{input}}"
RUN_ID_PARAM = "dbxdec_run_id"
"""The job run's id, its identity in Delta's ``txnAppId``: a retry never commits twice."""
RUN_ID_VALUE = "{{job.run_id}}-{{job.repair_count}}"
"""Job run id and repair count: the same for every task, retry and iteration of one run; a
repair (a deliberate re-run) gets a new id and commits again.
"""
JOB_ID_PARAM = "dbxdec_job_id"
"""The job's own id, declared only with ``CatchUp(since="last_success")`` (its tasks read
the job's run history, :mod:`...runtime.triggers.run_history`).
"""
JOB_ID_VALUE = "{{job.id}}"
""""the unique identifier assigned to the job"
(https://docs.databricks.com/aws/en/jobs/dynamic-value-references); a run outside
Databricks passes the id itself (``-p dbxdec_job_id=N``).
"""


def job_id_of(params: Mapping[str, str]) -> int | None:
    """The job id in :data:`JOB_ID_PARAM`; ``None`` when empty or unrendered.

    >>> job_id_of({"dbxdec_job_id": "42"}), job_id_of({"dbxdec_job_id": "{{job.id}}"})
    (42, None)
    """
    value = params.get(JOB_ID_PARAM, "").strip()
    return int(value) if value.isdigit() else None


@dataclass(frozen=True, slots=True)
class KeyRange:
    """The keys one run writes: ``first`` to ``last``, **inclusive at both ends**.

    A single-key run has ``first == last``. Encoded in job parameters as
    ``backfill_key=last`` plus, for more than one key, ``backfill_start_key=first``.

    Example:
        >>> KeyRange("2024-01-01", "2024-01-07").label
        '2024-01-01..2024-01-07'
        >>> KeyRange.single("2024-01-03").to_params()
        {'backfill_key': '2024-01-03', 'backfill_start_key': '', 'backfill_exact': 'false'}
    """

    first: str
    last: str

    @classmethod
    def single(cls, key: str) -> KeyRange:
        return cls(key, key)

    @classmethod
    def of(cls, keys: Sequence[str]) -> KeyRange:
        """The range from the first to the last of ``keys`` (non-empty, in order)."""
        if not keys:
            raise ValueError("a key range needs at least one key")
        return cls(keys[0], keys[-1])

    @property
    def label(self) -> str:
        """``2024-01-03`` or ``2024-01-01..2024-01-07``, for messages and ledgers."""
        return self.first if self.first == self.last else f"{self.first}..{self.last}"

    def to_params(self, *, exact: bool = False) -> dict[str, str]:
        """The job parameters of a run over this range."""
        return {
            BACKFILL_KEY_PARAM: self.last,
            BACKFILL_START_KEY_PARAM: "" if self.first == self.last else self.first,
            BACKFILL_EXACT_PARAM: "true" if exact else "false",
        }

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> KeyRange | None:
        """The range a run's parameters name; ``None`` when ``backfill_key`` is empty."""
        last = params.get(BACKFILL_KEY_PARAM, "")
        if not last:
            return None
        return cls(params.get(BACKFILL_START_KEY_PARAM, "") or last, last)


def keys_label(keys: Sequence[str]) -> str:
    """``KeyRange.of(keys).label``, or ``"final sync"`` for a run with no key."""
    return KeyRange.of(keys).label if keys else "final sync"


# -- the run's logical time -------------------------------------------------------------

_EPOCH_MS = re.compile(r"-?\d{1,16}", re.ASCII)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_ISO_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?", re.ASCII
)


def parse_run_time(value: str, *, tz: str = "UTC") -> datetime | None:
    """The run's logical time from ``backfill_run_time``; ``None`` when empty.

    Accepts epoch milliseconds, an ISO datetime with offset or ``Z``, one without (read in
    :data:`NAIVE_RUN_TIME_ZONE`), or an ISO date (its start in ``tz``).

    Example:
        >>> parse_run_time("1704067200000")
        datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)

    Raises:
        ValueError: anything else (an unrendered ``{{...}}`` too), naming the parameter.
    """
    text = value.strip()
    if not text:
        return None
    try:
        if _EPOCH_MS.fullmatch(text):
            return datetime.fromtimestamp(int(text) / 1000, tz=timezone.utc)
        if _ISO_DATE.fullmatch(text):
            return datetime.combine(date.fromisoformat(text), time(0), tzinfo=ZoneInfo(tz))
        if _ISO_DATETIME.fullmatch(text):
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=ZoneInfo(NAIVE_RUN_TIME_ZONE))
            return parsed.astimezone(timezone.utc)
    except (ValueError, OverflowError, OSError, ZoneInfoNotFoundError):
        pass
    hint = " (a Databricks reference that was not rendered)" if "{{" in text else ""
    raise ValueError(
        f"job parameter {BACKFILL_RUN_TIME_PARAM}={value!r}{hint} is not a time: expected "
        "epoch milliseconds, an ISO datetime (with offset or Z; without one it is "
        f"{NAIVE_RUN_TIME_ZONE}) or an ISO date"
    )


def run_time_param(at: datetime) -> str:
    """``backfill_run_time`` for an aware ``datetime``: epoch milliseconds."""
    if at.tzinfo is None:
        raise ValueError(f"run time {at.isoformat()} must be timezone-aware")
    return str(round(at.timestamp() * 1000))
