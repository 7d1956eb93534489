"""The wire contract: KeyRange's encoding, the forms of ``backfill_run_time`` and the
undo order of ``dbxdec_order``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.backfill.wire import (
    BACKFILL_PARAM_DEFAULTS,
    KeyRange,
    UndoOrder,
    decode_order,
    encode_order,
    keys_label,
    parse_run_time,
    run_time_param,
)

KEYS = st.from_regex(r"[0-9A-Za-z_.\-]{1,12}", fullmatch=True)


@given(KEYS, KEYS, st.booleans())
def test_a_key_range_round_trips_through_job_parameters(first: str, last: str, exact: bool) -> None:
    encoded = KeyRange(first, last).to_params(exact=exact)
    assert set(encoded) <= set(BACKFILL_PARAM_DEFAULTS)
    assert KeyRange.from_params(encoded) == KeyRange(first, last)
    assert encoded["backfill_exact"] == ("true" if exact else "false")


def test_labels_and_empty_parameters() -> None:
    assert KeyRange.single("2024-01-03").label == "2024-01-03"
    assert KeyRange("2024-01-01", "2024-01-07").label == "2024-01-01..2024-01-07"
    assert keys_label(["a", "b", "c"]) == "a..c"
    assert keys_label([]) == "final sync"
    assert KeyRange.from_params({"backfill_key": ""}) is None
    with pytest.raises(ValueError, match="at least one key"):
        KeyRange.of([])


@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)))
def test_epoch_milliseconds_round_trip(naive: datetime) -> None:
    at = naive.replace(tzinfo=timezone.utc, microsecond=naive.microsecond // 1000 * 1000)
    assert parse_run_time(run_time_param(at)) == at


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1711848600000", datetime(2024, 3, 31, 1, 30, tzinfo=timezone.utc)),
        ("2024-03-31T01:30:00Z", datetime(2024, 3, 31, 1, 30, tzinfo=timezone.utc)),
        ("2024-03-31T01:30:00.000Z", datetime(2024, 3, 31, 1, 30, tzinfo=timezone.utc)),
        ("2024-03-31T03:30:00+02:00", datetime(2024, 3, 31, 1, 30, tzinfo=timezone.utc)),
        ("2024-03-31 01:30", datetime(2024, 3, 31, 1, 30, tzinfo=timezone.utc)),
        ("2024-03-31T01:30:00", datetime(2024, 3, 31, 1, 30, tzinfo=timezone.utc)),
        # an ISO date is the start of that day in the definition's zone (a DST morning)
        ("2024-03-31", datetime(2024, 3, 30, 23, 0, tzinfo=timezone.utc)),
        ("", None),
    ],
    ids=[
        "epoch-ms",
        "iso-z",
        "iso-z-millis",
        "iso-offset",
        "iso-space",
        "naive-utc",
        "date",
        "empty",
    ],
)
def test_accepted_forms(value: str, expected: datetime | None) -> None:
    parsed = parse_run_time(value, tz="Europe/Berlin")
    assert parsed == expected
    if parsed is not None:
        assert parsed.utcoffset() in (timedelta(0), timedelta(hours=1))


@pytest.mark.parametrize(
    "value",
    ["{{job.trigger.time.timestamp_ms}}", "{{backfill.iso_date}}", "yesterday", "2024-13-01"],
)
def test_anything_else_is_refused_naming_the_parameter(value: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_run_time(value)
    message = str(caught.value)
    assert message.startswith(f"job parameter backfill_run_time={value!r}")
    assert ("not rendered" in message) == ("{{" in value)


RUN_IDS = st.lists(st.from_regex(r"[0-9A-Za-z_][0-9A-Za-z_\-]{0,20}", fullmatch=True), min_size=1)


@given(RUN_IDS, st.booleans())
def test_an_undo_order_round_trips_through_its_job_parameter(runs: list[str], force: bool) -> None:
    order = UndoOrder("sales-20240601T120000-1a2b", tuple(runs), force)
    encoded = encode_order(order)
    assert "{{" not in encoded and decode_order(encoded) == order
    assert decode_order("") is None and BACKFILL_PARAM_DEFAULTS["dbxdec_order"] == ""


UNDONE = st.lists(
    st.tuples(
        st.from_regex(r"[a-z_][a-z0-9_]{0,8}(\.[a-z_][a-z0-9_]{0,8}){2}", fullmatch=True),
        st.integers(0, 10**12),
    ),
    max_size=4,
)


@given(RUN_IDS, UNDONE)
def test_an_undo_order_carries_the_versions_earlier_undos_made(
    runs: list[str], undone: list[tuple[str, int]]
) -> None:
    order = UndoOrder("sales-20240601T120000-1a2b", tuple(runs), True, tuple(undone))
    assert decode_order(encode_order(order)) == order


@pytest.mark.parametrize(
    "value",
    [
        "x",
        '{"kind": "undo", "backfill_id": "a", "force": "maybe", "run_ids": ["1"]}',
        '{"kind": "undo", "backfill_id": "a", "force": true, "run_ids": [""]}',
        '{"kind": "undo", "backfill_id": "../a", "force": true, "run_ids": ["1"]}',
    ],
)
def test_a_malformed_undo_order_names_the_parameter(value: str) -> None:
    with pytest.raises(ValueError, match=r"^job parameter dbxdec_order='.*' is not an order"):
        decode_order(value)
