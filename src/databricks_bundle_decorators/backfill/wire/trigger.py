"""The job parameters of a triggered job, and how a task reads them: ``dbxdec_trigger_tables``,
``dbxdec_trigger_versions`` (``name=VERSION@COMMIT_TIME,...``), ``dbxdec_trigger_from_version``
and, for ``FileArrival``, ``dbxdec_trigger_location``; a catch-up run gives its keys in
``dbxdec_order``. Table names are escaped with backticks, as
https://docs.databricks.com/aws/en/jobs/dynamic-value-references requires of "identifiers ...
containing special characters" (https://docs.databricks.com/aws/en/jobs/trigger-table-update
writes them dotted). A run the trigger did not start leaves references unrendered or empty.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

TRIGGER_TABLES_PARAM = "dbxdec_trigger_tables"
TRIGGER_VERSIONS_PARAM = "dbxdec_trigger_versions"
TRIGGER_FROM_VERSION_PARAM = "dbxdec_trigger_from_version"
TRIGGER_LOCATION_PARAM = "dbxdec_trigger_location"
UPDATED_TABLES_REFERENCE = "{{job.trigger.table_update.updated_tables}}"
FILE_ARRIVAL_LOCATION_REFERENCE = "{{job.trigger.file_arrival.location}}"

_VERSION = re.compile(r"\d{1,19}")


def table_reference(table: str, field: str) -> str:
    """The dynamic value reference of ``field`` of watched table ``table``, the name in
    backticks.

    Example:
        >>> table_reference("main.raw.orders", "version")
        '{{job.trigger.table_update.`main.raw.orders`.version}}'
    """
    return f"{{{{job.trigger.table_update.`{table}`.{field}}}}}"


def trigger_parameters(tables: Iterable[str]) -> dict[str, str]:
    """The trigger job parameters and their defaults for the watched ``tables``."""
    versions = ",".join(
        f"{t}={table_reference(t, 'version')}@{table_reference(t, 'commit_timestamp.iso_datetime')}"
        for t in tables
    )
    return {
        TRIGGER_TABLES_PARAM: UPDATED_TABLES_REFERENCE,
        TRIGGER_VERSIONS_PARAM: versions,
        TRIGGER_FROM_VERSION_PARAM: "",
    }


def encode_versions(versions: Mapping[str, int], commit_times: Mapping[str, str]) -> str:
    """``dbxdec_trigger_versions`` as Databricks renders it (a local trigger, the emulator)."""
    return ",".join(f"{t}={v}@{commit_times.get(t, '')}" for t, v in versions.items())


def triggered_versions(params: Mapping[str, str]) -> dict[str, int] | None:
    """The version of each watched table that triggered this run; ``None`` when the run
    was not table-triggered (the references unrendered or empty).

    Example:
        >>> triggered_versions({"dbxdec_trigger_versions": "a.b.c=7@2024-01-01T00:00:00Z"})
        {'a.b.c': 7}
        >>> triggered_versions({"dbxdec_trigger_versions": "a.b.c={{job.trigger...}}@"}) is None
        True
    """
    text = params.get(TRIGGER_VERSIONS_PARAM, "")
    found: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        table, _, rest = item.partition("=")
        version = rest.partition("@")[0].strip()
        if _VERSION.fullmatch(version):
            found[table.strip()] = int(version)
    if not found:
        return None
    updated = updated_tables(params)
    if updated is not None:  # keep the tables the trigger reports as updated
        found = {t: v for t, v in found.items() if t in updated} or found
    return found


def updated_tables(params: Mapping[str, str]) -> set[str] | None:
    """The rendered ``updated_tables`` list, or ``None`` when it is not a JSON list."""
    try:
        value = json.loads(params.get(TRIGGER_TABLES_PARAM, ""))
    except ValueError:
        return None
    if not isinstance(value, list):
        return None
    return {str(v) for v in value}


def from_version(params: Mapping[str, str]) -> int | None:
    """``dbxdec_trigger_from_version`` as a version, ``None`` when empty.

    Raises:
        ValueError: not a non-negative integer.
    """
    text = params.get(TRIGGER_FROM_VERSION_PARAM, "").strip()
    if not text:
        return None
    if not _VERSION.fullmatch(text):
        raise ValueError(
            f"{TRIGGER_FROM_VERSION_PARAM}={text!r} is not a table version (0, 1, 2, ...)"
        )
    return int(text)


def file_arrival_parameters() -> dict[str, str]:
    """The job parameter of a file-triggered job (with keys) and its default."""
    return {TRIGGER_LOCATION_PARAM: FILE_ARRIVAL_LOCATION_REFERENCE}


def triggered_location(params: Mapping[str, str]) -> str | None:
    """The rendered file arrival location of a file-triggered run; ``None`` when the run
    was not file-triggered (the reference unrendered or empty).

    Example:
        >>> triggered_location({"dbxdec_trigger_location": "/Volumes/c/s/v/in"})
        '/Volumes/c/s/v/in'
        >>> triggered_location({"dbxdec_trigger_location": "{{job.trigger.file_arrival.location}}"})
    """
    text = params.get(TRIGGER_LOCATION_PARAM, "").strip()
    return text if text and "{{" not in text else None
