"""The launch form's fields: what the preview carries to the launch button is what was
asked (a round trip), and any posted text either parses or is refused in one line."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.app.acting import LaunchForm
from databricks_bundle_decorators.errors import UsageError

JOBS = ["nightly", "hourly"]
keys = st.lists(st.from_regex(r"2024-0[1-9]-[0-2][1-9]", fullmatch=True), min_size=1, max_size=4)


@st.composite
def forms(draw: st.DrawFn) -> LaunchForm:
    ranged = draw(st.booleans())
    chosen = () if ranged else tuple(draw(keys))
    return LaunchForm(
        job=draw(st.sampled_from(JOBS)),
        start="2024-01-01" if ranged else None,
        end="2024-01-31" if ranged else None,
        keys=chosen,
        batch_size=draw(st.integers(1, 100_000)),
        max_concurrent=draw(st.none() | st.integers(1, 1000)),
        rerun=draw(st.sampled_from(["all", "failed", "missing"])),
        downstream=draw(st.booleans()),
        order=draw(st.sampled_from(["forward", "reverse"])),
        retries=draw(st.integers(0, 100_000)),
        halt_on_error=draw(st.booleans()),
        exact=draw(st.booleans()),
        final_sync=draw(st.booleans()),
        checks=draw(st.booleans()),
    )


@given(forms())
def test_the_preview_carries_exactly_what_was_asked(form: LaunchForm) -> None:
    again = LaunchForm.parse(form.fields(), JOBS)
    assert again == form
    assert form.command().startswith(f"dbxdec backfill {form.job} ")


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "job",
                "start",
                "end",
                "keys",
                "batch_size",
                "max_concurrent",
                "retries",
                "rerun",
                "order",
            ]
        ),
        st.text(max_size=30),
    )
)
def test_any_posted_text_parses_or_is_refused_in_one_line(fields: dict[str, str]) -> None:
    try:
        LaunchForm.parse(fields, JOBS)
    except UsageError as exc:
        assert "\n" not in exc.render()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"job": "nope", "keys": "k"}, "unknown job 'nope'"),
        ({"job": "nightly"}, "give a range (start and end) or keys"),
        ({"job": "nightly", "keys": "k", "start": "a", "end": "b"}, "either keys or a range"),
        (
            {"job": "nightly", "keys": "k", "batch_size": "0"},
            "batch size must be a whole number from 1",
        ),
        ({"job": "nightly", "keys": "k", "retries": "-1"}, "retries must be a whole number from 0"),
        ({"job": "nightly", "keys": "k", "order": "sideways"}, "order must be forward or reverse"),
    ],
)
def test_bad_fields_are_named(fields: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        LaunchForm.parse(fields, JOBS)
