"""The staging tables of a full refresh: ``main.sales.orders`` stages in
``main.sales.orders__dbxdec_refresh_<12 hex>`` (a digest of the backfill id), and the swap run
replaces each table with its checked staging table (:mod:`.wire.order`).
"""

from __future__ import annotations

import hashlib

STAGING_MARK = "__dbxdec_refresh_"
_TABLE_PART_MAX = 255


def staging_table_part(table: str, backfill_id: str) -> str:
    """The last part of ``table``'s staging table name for ``backfill_id``: letters, digits and
    ``_`` only, at most 255 characters (a long name is shortened; the digest keeps it unique).

    Example:
        >>> staging_table_part("orders", "sales-20240601T120000-1a2b")
        'orders__dbxdec_refresh_9cc65e0509e0'
    """
    digest = hashlib.sha256(backfill_id.encode()).hexdigest()[:12]
    suffix = f"{STAGING_MARK}{digest}"
    return f"{table[: _TABLE_PART_MAX - len(suffix)]}{suffix}"
