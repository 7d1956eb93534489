"""The job parameters of a table-triggered job, and how a task reads them.

A job declared with ``@job(triggered_by=TableUpdate(...))`` carries three more job parameters
(names under the reserved ``dbxdec_`` prefix, so they never collide with a user's):

* ``dbxdec_trigger_tables``: ``{{job.trigger.table_update.updated_tables}}``;
* ``dbxdec_trigger_versions``: per watched table, ``name=VERSION@COMMIT_TIME`` joined by
  ``,``, each part a dynamic value reference
  (``{{job.trigger.table_update.`cat.sch.tbl`.version}}`` and
  ``...commit_timestamp.iso_datetime``);
* ``dbxdec_trigger_from_version``: empty, or the source version a first run starts after
  (``--from-version``), overriding the recorded watermark.

The one catch-up run dbxdec launches after a backfill that paused the job's trigger
(``launch/operations/trigger_catch_up.py``) sets ``dbxdec_trigger_versions`` to the
versions the catch-up was computed at, and gives its keys in ``dbxdec_order``
(:attr:`.order.TaskOrder.keys`) instead of resolving them.

Source of the references: "Trigger jobs when source tables are updated",
https://docs.databricks.com/aws/en/jobs/trigger-table-update (job parameters of a
table-update trigger), which writes the table's full name as it is:
``{{job.trigger.table_update.<catalog.schema.table>.version}}``. dbxdec emits the name
escaped with backticks, as https://docs.databricks.com/aws/en/jobs/dynamic-value-references
requires of "identifiers ... containing special characters" (a dotted name is one
identifier here), and keeps that form until the page's unescaped form is confirmed on a
workspace (``docs/platform.md``); the emulator accepts both.

A run that is not table-triggered (run-now, a launched backfill, a schedule) leaves the
references unrendered or empty; the docs do not say which, so :func:`triggered_versions`
treats either as "not triggered".

A job declared with ``@job(triggered_by=FileArrival(url, keys=...))`` carries one more:
``dbxdec_trigger_location``: ``{{job.trigger.file_arrival.location}}`` ("the file
arrival location", https://docs.databricks.com/aws/en/jobs/dynamic-value-references).
Only whether it is rendered matters (:func:`triggered_location`): the run lists the
declared url, not the rendered text. What a run that the trigger did not start renders
there, the page does not say; if it is the location, such a run without a key processes
the files new since the last processed run, as a triggered run would (harmless: writes are
idempotent and the listing advances the same way). An explicit key always wins.
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
