"""What ``-t TARGET`` means for finding a deployed job, read from ``databricks.yml`` as the
Databricks CLI applies it: a ``mode: development`` target prefixes job names with
``[dev <user short name>] `` unless ``presets.name_prefix`` says otherwise.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ...bundle.bundle_file import TargetSettings, find_bundle_file, read_bundle_file
from ...errors import UsageError, did_you_mean

_SHORT_NAME = "${workspace.current_user.short_name}"


@dataclass(frozen=True, slots=True)
class TargetInfo:
    """The parts of a bundle target that locate its jobs."""

    name: str
    dev_mode: bool = False
    name_prefix: str | None = None
    host: str | None = None
    profile: str | None = None


def read_target(root: Path, target: str) -> TargetInfo:
    """The target ``target`` of the bundle at ``root``.

    Raises:
        UsageError: no ``databricks.yml``, it is unreadable, or the target is unknown.
    """
    path = find_bundle_file(root)
    if path is None:
        raise UsageError(f"-t {target}: no databricks.yml in {root}; pass --job-id ID instead")
    bundle = read_bundle_file(path)
    if target not in bundle.targets:
        raise UsageError(
            f"-t {target}: no such target in {path}.{did_you_mean(target, bundle.targets)} "
            f"Targets: {', '.join(bundle.targets) or 'none'}"
        )
    settings = bundle.target_settings.get(target, TargetSettings())
    return TargetInfo(
        name=target,
        dev_mode=settings.mode == "development",
        name_prefix=settings.name_prefix,
        host=settings.host,
        profile=settings.profile,
    )


def needs_short_name(prefix: str | None) -> bool:
    return prefix is not None and _SHORT_NAME in prefix


def with_short_name(prefix: str, short_name: str) -> str:
    return prefix.replace(_SHORT_NAME, short_name)


# The four spellings Go's ``uuid.Parse`` (github.com/google/uuid) accepts, which the CLI's
# ``iamutil.IsServicePrincipalName`` uses to tell a service principal (whose user name is
# its application id) from a user.
_UUID = re.compile(
    r"(?i:urn:uuid:)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\}"
    r"|[0-9a-f]{32}",
    re.IGNORECASE,
)


def is_service_principal_name(user_name: str) -> bool:
    """Whether the CLI takes ``user_name`` for a service principal's: it parses as a UUID
    (databricks/cli ``libs/iamutil/service_principal.go``)."""
    return _UUID.fullmatch(user_name) is not None


def short_user_name(user_name: str, display_name: str | None = None) -> str:
    """The short name the Databricks CLI puts in ``[dev <short name>] `` job names.

    The CLI's rule (databricks/cli ``libs/iamutil/user.go`` ``GetShortUserName`` and
    ``libs/textutil/textutil.go`` ``NormalizeString``, read at commit 7bbe285 of 2026-08-21):
    a service principal (user name a UUID) with a display name uses its display name,
    anyone else the user name; the part before the first ``@`` is lowercased, every rune
    that is not a Unicode letter or decimal digit becomes ``_``, runs of ``_`` collapse
    to one, and leading and trailing ``_`` are trimmed.

    Example:
        >>> short_user_name("John.Doe__x_@example.com")
        'john_doe_x'
        >>> short_user_name("6f2c1b9e-1f0a-4c3e-9d7b-2a5e8c4f1b3d", "Nightly Loader")
        'nightly_loader'
    """
    name = user_name
    if is_service_principal_name(user_name) and display_name:
        name = display_name
    local = name.split("@", 1)[0]
    # Go's strings.ToLower maps rune by rune (simple case mapping): lower each character
    # on its own, keeping one rune, so no context rule (final sigma) or expansion applies.
    lowered = "".join(_lower_rune(c) for c in local)
    mapped = "".join(c if _letter_or_digit(c) else "_" for c in lowered)
    return re.sub("_+", "_", mapped).strip("_")


def _lower_rune(char: str) -> str:
    lowered = char.lower()
    return lowered if len(lowered) == 1 else lowered[0]


def _letter_or_digit(char: str) -> bool:
    # Go's unicode.IsLetter (categories L*) and unicode.IsDigit (category Nd).
    category = unicodedata.category(char)
    return category.startswith("L") or category == "Nd"
