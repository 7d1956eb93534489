"""The wire form of a full refresh (``backfill_full_refresh``), and its staging names.

``dbxdec backfill JOB --full-refresh`` rebuilds a job's Spark tables so that a reader sees
the old table or the new one, never a mixture: its slices run in ``stage`` mode (every
table the job writes through ``SparkTableIoManager`` is written to, and read from, a
staging table of the backfill), and one final run in ``swap`` mode checks each staging
table whole and replaces its table with it in one Delta commit.

Staging tables sit beside their table: ``main.sales.orders`` is staged in
``main.sales.orders__dbxdec_refresh_<12 hex>``, the hex a digest of the backfill id, so a
resumed backfill writes to the same staging table and two backfills never share one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal

from .wire import BACKFILL_FULL_REFRESH_PARAM, parse_order

RefreshPhase = Literal["stage", "swap"]
STAGING_MARK = "__dbxdec_refresh_"
_TABLE_PART_MAX = 255
_ORDER = re.compile(
    r"(?P<phase>stage|swap):(?P<backfill>[A-Za-z0-9_][A-Za-z0-9_\-]{0,150})", re.ASCII
)


@dataclass(frozen=True, slots=True)
class FullRefreshOrder:
    """What a run of a full refresh does: ``stage`` (write the staging tables) or
    ``swap`` (check them and replace the tables), for backfill ``backfill_id``.

    Example:
        >>> order = FullRefreshOrder("swap", "sales-20240601T120000-1a2b")
        >>> order.to_param()
        'swap:sales-20240601T120000-1a2b'
        >>> FullRefreshOrder.from_param(order.to_param()) == order
        True
    """

    phase: RefreshPhase
    backfill_id: str

    def to_param(self) -> str:
        """The ``backfill_full_refresh`` value (see :meth:`from_param`)."""
        value = f"{self.phase}:{self.backfill_id}"
        if _ORDER.fullmatch(value) is None:
            raise ValueError(f"{value!r} cannot be sent in {BACKFILL_FULL_REFRESH_PARAM}")
        return value

    @classmethod
    def from_param(cls, value: str) -> FullRefreshOrder | None:
        """The order in a ``backfill_full_refresh`` value; ``None`` when it is empty.

        Raises:
            ValueError: not an encoded order; the message names the parameter.
        """
        found = parse_order(
            value,
            _ORDER,
            BACKFILL_FULL_REFRESH_PARAM,
            "a full-refresh order: expected stage:ID or swap:ID "
            "(set by dbxdec backfill --full-refresh)",
        )
        if found is None:
            return None
        phase: RefreshPhase = "stage" if found["phase"] == "stage" else "swap"
        return cls(phase, found["backfill"])


def staging_table_part(table: str, backfill_id: str) -> str:
    """The last part of the name of ``table``'s staging table for ``backfill_id``.

    Only letters, digits and ``_`` (the id's ``-`` never reaches the name), at most 255
    characters (a long table name is shortened; the digest keeps it unique).

    Example:
        >>> staging_table_part("orders", "sales-20240601T120000-1a2b")
        'orders__dbxdec_refresh_9cc65e0509e0'
    """
    digest = hashlib.sha256(backfill_id.encode()).hexdigest()[:12]
    suffix = f"{STAGING_MARK}{digest}"
    return f"{table[: _TABLE_PART_MAX - len(suffix)]}{suffix}"
