"""The wire contract: every name and encoding that crosses launcher -> job -> ``dbxdec-run``.

Bundle codegen (the producer), the launcher, the local runner and the runtime entry point
(the consumers) all import these names, so they cannot drift apart. It lives in the
lowest layer so that ``dbxdec-run`` needs nothing from bundle generation.

The ``python_wheel_task`` contract: what codegen writes and ``dbxdec-run`` reads.

Every generated task runs ``dbxdec-run`` with these named parameters (besides the job
parameters, pushed down by name)::

    dbxdec-run --dbxdec_job=sales --dbxdec_task=clean --dbxdec_module=pkg.sales \\
        --dbxdec_run_id=550315892394120 ...

"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from types import MappingProxyType
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# -- job parameters of a job with a backfill definition ---------------------------------

BACKFILL_KEY_PARAM = "backfill_key"
BACKFILL_START_KEY_PARAM = "backfill_start_key"
BACKFILL_EXACT_PARAM = "backfill_exact"
BACKFILL_RUN_TIME_PARAM = "backfill_run_time"
"""The run's logical time: the instant keys are derived from when ``backfill_key`` is empty
(a scheduled run), with ``data_lag``, lookback and schedule gaps applied."""
RUN_TIME_DEFAULT = "{{job.trigger.time.timestamp_ms}}"
"""Databricks' dynamic value reference for the trigger time, epoch milliseconds: a repair
run or a retried task resolves the same keys as the run's first attempt."""
BACKFILL_UNDO_PARAM = "backfill_undo"
"""Empty, except in a run ``dbxdec backfill undo`` triggers: then it carries an
:class:`UndoOrder`, and every task restores the Delta tables it writes to their version
before that backfill instead of running."""
BACKFILL_PRESENCE_PARAM = "backfill_presence"
"""Empty, except in a run ``dbxdec catchup --by data`` triggers: then it carries a
:class:`PresenceOrder`, and every task reports which of its keys have rows in the tables
it writes (a :class:`PresenceReport` line in its output) instead of running."""
BACKFILL_FULL_REFRESH_PARAM = "backfill_full_refresh"
"""Empty, except in the runs of ``dbxdec backfill --full-refresh``: ``stage:<backfill id>``
in its slices (tables are written to staging tables) and ``swap:<backfill id>`` in its final
run (each staging table is checked whole, then replaces its table in one commit); see
:class:`~.refresh.FullRefreshOrder`."""
BACKFILL_FORCE_REWRITE_PARAM = "backfill_force_rewrite"
"""``"true"`` in the runs of ``dbxdec backfill --force-rewrite`` (and ``dbxdec run
--force-rewrite``): append-once outputs rewrite the run's keys they already hold instead
of skipping them (see :mod:`..runtime.io.append_once`); ``"false"`` otherwise."""
BACKFILL_TASKS_PARAM = "backfill_tasks"
"""Empty (every task runs), or the comma-separated tasks a run of ``dbxdec backfill
--tasks``/``--skip-tasks`` runs (on Databricks with run-now's ``only`` as well): a task
whose input comes from a task that does not run checks, before it runs, that the
upstream table holds the run's keys."""
BACKFILL_CHECKS_PARAM = "backfill_checks"
"""``"on"`` (the default): every task judges its checks before it writes; ``"off"`` in the
runs of ``dbxdec backfill --no-checks``: checks are skipped (a failing check does not fail
the slice, and no check results are recorded)."""
NAIVE_RUN_TIME_ZONE = "UTC"
"""How an ISO datetime without an offset in ``backfill_run_time`` is read (e.g. from
Databricks' Backfill dialog, ``{{backfill.iso_datetime}}``)."""

BACKFILL_PARAMS: tuple[str, ...] = (
    BACKFILL_KEY_PARAM,
    BACKFILL_START_KEY_PARAM,
    BACKFILL_EXACT_PARAM,
    BACKFILL_RUN_TIME_PARAM,
    BACKFILL_UNDO_PARAM,
    BACKFILL_PRESENCE_PARAM,
    BACKFILL_FULL_REFRESH_PARAM,
    BACKFILL_FORCE_REWRITE_PARAM,
    BACKFILL_TASKS_PARAM,
    BACKFILL_CHECKS_PARAM,
)
BACKFILL_PARAM_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        BACKFILL_KEY_PARAM: "",
        BACKFILL_START_KEY_PARAM: "",
        BACKFILL_EXACT_PARAM: "false",
        BACKFILL_RUN_TIME_PARAM: RUN_TIME_DEFAULT,
        BACKFILL_UNDO_PARAM: "",
        BACKFILL_PRESENCE_PARAM: "",
        BACKFILL_FULL_REFRESH_PARAM: "",
        BACKFILL_FORCE_REWRITE_PARAM: "false",
        BACKFILL_TASKS_PARAM: "",
        BACKFILL_CHECKS_PARAM: "on",
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
"""The Databricks job run's id: the run's identity in Delta's ``txnAppId``, so a retried
attempt of a task never commits its write twice."""
RUN_ID_VALUE = "{{job.run_id}}-{{job.repair_count}}"
"""Databricks' dynamic value references for the job run id and its repair count: the same
for every task, task retry and for-each iteration of one run, so a retried attempt is
skipped; a repair of the run (a deliberate re-run) gets a new id and commits again."""


# -- orders and reports that cross the wire as text ------------------------------------


def parse_order(
    value: str, pattern: re.Pattern[str], param: str, expected: str
) -> re.Match[str] | None:
    """The match of an order (undo, presence, full refresh) in job parameter ``param``;
    ``None`` when the value is empty.

    Raises:
        ValueError: the value does not match; the message names ``param`` and says
            ``expected`` (e.g. ``"a presence order: expected first=KEY;last=KEY"``).
    """
    text = value.strip()
    if not text:
        return None
    found = pattern.fullmatch(text)
    if found is None:
        shown = text if len(text) <= 80 else f"{text[:77]}..."
        raise ValueError(f"job parameter {param}={shown!r} is not {expected}")
    return found


def report_bodies(text: str, prefix: str, what: str) -> list[tuple[str, Any]]:
    """``(line, decoded JSON)`` of every line of a task's output that starts with
    ``prefix`` (a report a task prints for the launcher); other lines are ignored.

    Raises:
        ValueError: such a line is not JSON; the message says it is a malformed
            ``what`` (e.g. ``"presence report"``).
    """
    found = []
    for line in text.splitlines():
        if line.startswith(prefix):
            try:
                found.append((line, json.loads(line[len(prefix) :])))
            except ValueError as exc:
                raise ValueError(f"a malformed {what} line: {line[:120]!r}") from exc
    return found


# -- key ranges --------------------------------------------------------------------------


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


# -- undo runs ----------------------------------------------------------------------------

_UNDO_ID = r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,150}"
_UNDONE = r"[A-Za-z0-9_.]{1,800}@[0-9]{1,18}"
_UNDO_ORDER = re.compile(
    rf"backfill=(?P<backfill>{_UNDO_ID});force=(?P<force>true|false);"
    rf"runs=(?P<runs>{_UNDO_ID}(?:,{_UNDO_ID})*)"
    rf"(?:;undone=(?P<undone>{_UNDONE}(?:,{_UNDONE})*))?",
    re.ASCII,
)
UNDO_REPORT_PREFIX = "dbxdec-undo: "
"""Starts the output line in which a task of an undo run reports a commit it made
(``{"table": NAME, "version": N}``): RESTORE and DELETE take no writer options, so the
launcher reads the version back from the task's logs and records it in the ledger."""


@dataclass(frozen=True, slots=True)
class UndoOrder:
    """What an undo run restores: the tables backfill ``backfill_id``'s runs wrote.

    Encoded in ``backfill_undo`` as plain text (no braces, which Databricks would read
    as a reference; no quoting needed: ids are letters, digits, ``_`` and ``-``).

    Example:
        >>> UndoOrder("sales-20240601T120000-1a2b", ("5501-0", "5502-0")).to_param()
        'backfill=sales-20240601T120000-1a2b;force=false;runs=5501-0,5502-0'
    """

    backfill_id: str
    run_ids: tuple[str, ...]
    force: bool = False
    undone: tuple[tuple[str, int], ...] = ()
    """``(table, version)`` of the commits earlier undos of the backfill made."""

    def to_param(self) -> str:
        """The ``backfill_undo`` value (see :meth:`from_param`)."""
        force = "true" if self.force else "false"
        undone = ",".join(f"{table}@{version}" for table, version in self.undone)
        tail = f";undone={undone}" if undone else ""
        return f"backfill={self.backfill_id};force={force};runs={','.join(self.run_ids)}{tail}"

    @classmethod
    def from_param(cls, value: str) -> UndoOrder | None:
        """The order in a ``backfill_undo`` value; ``None`` when it is empty.

        Raises:
            ValueError: not an encoded order; the message names the parameter.
        """
        found = parse_order(
            value,
            _UNDO_ORDER,
            BACKFILL_UNDO_PARAM,
            "an undo order: expected backfill=ID;force=true|false;runs=RUN,RUN... "
            "(set by dbxdec backfill undo)",
        )
        if found is None:
            return None
        runs = tuple(found["runs"].split(","))
        undone = tuple(
            (table, int(version))
            for table, _, version in (p.rpartition("@") for p in (found["undone"] or "").split(","))
            if table
        )
        return cls(found["backfill"], runs, found["force"] == "true", undone)


# -- presence runs ------------------------------------------------------------------------

_WIRE_KEY = r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}"
_PRESENCE_ORDER = re.compile(rf"first=(?P<first>{_WIRE_KEY});last=(?P<last>{_WIRE_KEY})", re.ASCII)
PRESENCE_REPORT_PREFIX = "dbxdec-presence: "
"""Starts the output line in which a task of a presence run reports one table; the
launcher reads it back from the task's logs (``jobs/runs/get-output``)."""


@dataclass(frozen=True, slots=True)
class PresenceOrder:
    """What a presence run looks at: the keys from ``first`` to ``last`` (inclusive).

    Encoded in ``backfill_presence`` as plain text; keys are letters, digits and
    ``_ . : -`` (every key format dbxdec has), so nothing needs quoting.

    Example:
        >>> PresenceOrder(KeyRange("2024-01-01", "2024-01-05")).to_param()
        'first=2024-01-01;last=2024-01-05'
    """

    keys: KeyRange

    def to_param(self) -> str:
        """The ``backfill_presence`` value (see :meth:`from_param`)."""
        for key in (self.keys.first, self.keys.last):
            if re.fullmatch(_WIRE_KEY, key, re.ASCII) is None:
                raise ValueError(f"key {key!r} cannot be sent in {BACKFILL_PRESENCE_PARAM}")
        return f"first={self.keys.first};last={self.keys.last}"

    @classmethod
    def from_param(cls, value: str) -> PresenceOrder | None:
        """The order in a ``backfill_presence`` value; ``None`` when it is empty.

        Raises:
            ValueError: not an encoded order; the message names the parameter.
        """
        found = parse_order(
            value,
            _PRESENCE_ORDER,
            BACKFILL_PRESENCE_PARAM,
            "a presence order: expected first=KEY;last=KEY (set by dbxdec catchup --by data)",
        )
        if found is None:
            return None
        return cls(KeyRange(found["first"], found["last"]))


@dataclass(frozen=True, slots=True)
class PresenceReport:
    """One table as a task of a presence run found it: the rows of each key that has some.

    Attributes:
        table: The table's name (``catalog.schema.table``).
        task: The task that writes it.
        exists: Whether the table exists (``False``: every key is missing).
        rows: Rows per key, for the keys of the order that have rows.

    Example:
        >>> report = PresenceReport("main.s.t", "clean", True, {"2024-01-01": 2})
        >>> report.to_line()[:59]
        'dbxdec-presence: {"exists": true, "rows": {"2024-01-01": 2}'
        >>> PresenceReport.from_lines("noise\\n" + report.to_line()) == [report]
        True
    """

    table: str
    task: str
    exists: bool
    rows: Mapping[str, int]

    def to_line(self) -> str:
        """The report as one output line."""
        body = {"table": self.table, "task": self.task, "exists": self.exists}
        body["rows"] = dict(self.rows)
        return PRESENCE_REPORT_PREFIX + json.dumps(body, sort_keys=True)

    @classmethod
    def from_lines(cls, text: str) -> list[PresenceReport]:
        """Every report line in a task's output (other lines are ignored).

        Raises:
            ValueError: a line starts like a report but is not one.
        """
        reports = []
        for line, body in report_bodies(text, PRESENCE_REPORT_PREFIX, "presence report"):
            try:
                rows = body["rows"]
                report = cls(
                    str(body["table"]),
                    str(body["task"]),
                    bool(body["exists"]),
                    {str(k): int(v) for k, v in rows.items()},
                )
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"a malformed presence report line: {line[:120]!r}") from exc
            reports.append(report)
        return reports


# -- the run's logical time -------------------------------------------------------------

_EPOCH_MS = re.compile(r"-?\d{1,16}", re.ASCII)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_ISO_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?", re.ASCII
)


def parse_run_time(value: str, *, tz: str = "UTC") -> datetime | None:
    """The run's logical time from ``backfill_run_time``; ``None`` when empty.

    Accepted forms: epoch milliseconds (``{{job.trigger.time.timestamp_ms}}``); an ISO
    datetime with an offset or ``Z`` (that instant); an ISO datetime without an offset
    (read in :data:`NAIVE_RUN_TIME_ZONE`); an ISO date (the start of that day in ``tz``,
    the backfill definition's zone: ``{{backfill.iso_date}}``).

    Example:
        >>> parse_run_time("1704067200000")
        datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)

    Raises:
        ValueError: anything else, an unrendered ``{{...}}`` included; the message names
            the parameter.
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
