"""Development-mode job names: the Databricks CLI's short user name, one spelling."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators.launch.backends.databricks_backend import find_job
from databricks_bundle_decorators.launch.workspace.target import (
    is_service_principal_name,
    short_user_name,
)
from databricks_bundle_decorators.testing.emulator import JobsEmulator

APP_ID = "6f2c1b9e-1f0a-4c3e-9d7b-2a5e8c4f1b3d"


@pytest.mark.parametrize(
    ("user_name", "display_name", "short"),
    [
        ("John.Doe__x_", None, "john_doe_x"),
        ("John.Doe__x_@example.com", "John Doe", "john_doe_x"),
        ("__a..b--c__@x.org", None, "a_b_c"),
        ("Zoë.Ärger@example.com", None, "zoë_ärger"),
        ("a1²b@x", None, "a1_b"),  # ² is a digit to Python, not a decimal digit to Go
        (APP_ID, "Nightly Loader (prod)", "nightly_loader_prod"),
        (APP_ID, "", APP_ID.replace("-", "_")),  # no display name: the user name
        (APP_ID.upper(), "Ops-Bot", "ops_bot"),
        (f"{{{APP_ID}}}", "Ops-Bot", "ops_bot"),
        (APP_ID.replace("-", ""), "Ops-Bot", "ops_bot"),
        ("not-a-uuid@x.org", "Someone Else", "not_a_uuid"),  # a user keeps the user name
    ],
)
def test_short_user_name_follows_the_cli(
    user_name: str, display_name: str | None, short: str
) -> None:
    assert short_user_name(user_name, display_name) == short


@given(st.text(max_size=40))
def test_short_names_hold_only_lowercase_letters_digits_and_single_inner_underscores(
    name: str,
) -> None:
    short = short_user_name(name)
    assert "__" not in short and not short.startswith("_") and not short.endswith("_")
    assert "@" not in short and short == short_user_name(short)


def test_uuid_spellings_are_those_go_uuid_parse_accepts() -> None:
    assert is_service_principal_name(APP_ID)
    assert is_service_principal_name(f"urn:uuid:{APP_ID}")
    assert not is_service_principal_name(APP_ID[:-1])
    assert not is_service_principal_name(f"{APP_ID[:8]}{APP_ID[9:]}")  # one dash missing


def test_dev_job_found_by_the_cli_short_name() -> None:
    with JobsEmulator(user_name="John.Doe__x_@example.com") as emu:
        dev = emu.create_job("[dev john_doe_x] nightly")
        emu.create_job("[dev John_Doe__x_] nightly")  # an older guess's spelling
        assert find_job(emu.workspace_client(), "nightly", dev_mode=True).job_id == dev


def test_a_service_principal_finds_its_dev_job_by_display_name() -> None:
    with JobsEmulator() as emu:
        emu.answer_me_as_service_principal(APP_ID, "Nightly Loader")
        me = emu.workspace_client().current_user.me()
        assert (me.user_name, me.display_name, me.emails) == (APP_ID, "Nightly Loader", [])
        dev = emu.create_job("[dev nightly_loader] nightly")
        emu.create_job(f"[dev {APP_ID.replace('-', '_')}] nightly")
        assert find_job(emu.workspace_client(), "nightly", dev_mode=True).job_id == dev
