"""The staging tables of a full refresh.

``dbxdec backfill JOB --full-refresh`` rebuilds a job's Spark tables so that a reader sees
the old table or the new one, never a mixture: its slices run a stage order (every table
the job writes through ``SparkTableIoManager`` is written to, and read from, a staging
table of the backfill), and one final run a swap order, which checks each staging table
whole and replaces its table with it in one Delta commit (see :mod:`.wire.order`).

Staging tables sit beside their table: ``main.sales.orders`` is staged in
``main.sales.orders__dbxdec_refresh_<12 hex>``, the hex a digest of the backfill id, so a
resumed backfill writes to the same staging table and two backfills never share one.
"""

from __future__ import annotations

import hashlib

STAGING_MARK = "__dbxdec_refresh_"
_TABLE_PART_MAX = 255


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
