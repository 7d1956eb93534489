"""OAuth machine-to-machine for the emulator's service principals (what ``oauth-m2m`` asks).

Databricks documents the flow at https://docs.databricks.com/aws/en/dev-tools/auth/oauth-m2m
("Manually generate a workspace-level access token"): a ``POST`` to
``https://<workspace>/oidc/v1/token`` with the service principal's client ID and
secret as HTTP Basic credentials and the form ``grant_type=client_credentials&
scope=all-apis`` answers ``{"access_token", "token_type": "Bearer", "expires_in":
3600, "scope"}`` ("Each access token is valid for one hour"). The SDK's ``oauth-m2m``
strategy (databricks-sdk ``credentials_provider.oauth_service_principal``) finds the
token endpoint through the OIDC discovery document
``/oidc/.well-known/oauth-authorization-server`` (``oauth.get_workspace_endpoints``; the
``oidc_endpoint`` of ``/.well-known/databricks-config`` is its root), reads
``token_endpoint`` and ``authorization_endpoint`` from it (``oauth.OidcEndpoints``), and
sends the Basic credentials (``use_header=True``).

A wrong client ID or secret is answered as RFC 6749 section 5.2 says for a failed client
authentication with Basic credentials: ``401`` with ``{"error": "invalid_client",
"error_description"}`` (the SDK turns the body into ``ValueError("invalid_client:
...")``, ``oauth.retrieve_token``). A grant other than ``client_credentials`` is
``400 unsupported_grant_type`` (section 5.2).

An issued token authorizes API requests as its service principal: SCIM ``Me`` answers
the principal (``userName`` its application ID, as for
:meth:`~._emulator_permissions.PermissionControls.answer_me_as_service_principal`), and
each request it authorized is logged (:attr:`OAuthModel.calls`) so that a test sees who
called. Nothing here is ever logged with a secret or a token.

Not modelled: token expiry (a token says ``expires_in`` 3600 but is accepted for the
emulator's life; the SDK asks for a new one before expiry itself), and the SCIM ``Me``
``userName`` of a service principal, which the API reference does not spell out: a test
that relies on it is relying on this emulator, not on Databricks.
"""

from __future__ import annotations

import base64
import secrets
import threading
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from .._store._emulator_state import JsonDict

__all__ = ["OAuthControls", "OAuthModel", "route_oauth"]

DISCOVERY = "/oidc/.well-known/oauth-authorization-server"
TOKEN = "/oidc/v1/token"
AUTHORIZE = "/oidc/v1/authorize"
TOKEN_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class ServicePrincipal:
    """A service principal with one OAuth secret."""

    application_id: str
    secret: str
    display_name: str


@dataclass
class OAuthModel:
    """Service principals, the tokens issued to them and the calls they authorized;
    the caller holds the emulator's lock."""

    principals: dict[str, ServicePrincipal] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)  # access token -> application id
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    """``(application id, method, path)`` of every API request a token authorized."""
    refused: int = 0
    """Token requests refused (a wrong client ID or secret)."""

    def caller(self, authorization: str | None) -> ServicePrincipal | None:
        """The service principal whose issued token ``authorization`` carries."""
        scheme, _, token = (authorization or "").partition(" ")
        found = self.tokens.get(token) if scheme == "Bearer" else None
        return self.principals.get(found) if found is not None else None

    def issue(self, authorization: str | None, form: bytes) -> tuple[int, JsonDict]:
        """Answer a token request (see the module docstring)."""
        fields = {k: v[-1] for k, v in parse_qs(form.decode(errors="replace")).items()}
        if fields.get("grant_type") != "client_credentials":
            return 400, {
                "error": "unsupported_grant_type",
                "error_description": "Only client_credentials is supported here.",
            }
        scheme, _, encoded = (authorization or "").partition(" ")
        try:
            pair = base64.b64decode(encoded, validate=True).decode() if scheme == "Basic" else ""
        except ValueError:
            pair = ""
        client_id, _, secret = pair.partition(":")
        principal = self.principals.get(client_id)
        if principal is None or not secrets.compare_digest(principal.secret, secret):
            self.refused += 1
            return 401, {
                "error": "invalid_client",
                "error_description": "Client authentication failed",
            }
        token = f"emu-oauth-{secrets.token_hex(16)}"
        self.tokens[token] = client_id
        return 200, {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": TOKEN_SECONDS,
            "scope": fields.get("scope") or "all-apis",
        }


def route_oauth(
    model: OAuthModel, method: str, path: str, form: bytes, authorization: str | None, url: str
) -> tuple[int, JsonDict] | None:
    """The answer to the OIDC discovery document or a token request, else ``None``."""
    if path == DISCOVERY and method == "GET":
        return 200, {
            "issuer": f"{url}/oidc",
            "authorization_endpoint": f"{url}{AUTHORIZE}",
            "token_endpoint": f"{url}{TOKEN}",
            "grant_types_supported": ["client_credentials", "authorization_code"],
        }
    if path == TOKEN and method == "POST":
        return model.issue(authorization, form)
    return None


class OAuthControls:
    """Mixed into :class:`~..emulator.JobsEmulator`: register service principals."""

    _lock: threading.Lock
    _oauth: OAuthModel

    def add_service_principal(
        self, application_id: str, secret: str, *, display_name: str = ""
    ) -> None:
        """Register a service principal that may get OAuth tokens with ``secret``."""
        principal = ServicePrincipal(application_id, secret, display_name or application_id)
        with self._lock:
            self._oauth.principals[application_id] = principal

    def service_principal_calls(self, application_id: str) -> list[tuple[str, str]]:
        """``(method, path)`` of every API request a token of the principal authorized."""
        with self._lock:
            return [(m, p) for who, m, p in self._oauth.calls if who == application_id]

    @property
    def refused_token_requests(self) -> int:
        """How many token requests were refused (a wrong client ID or secret)."""
        with self._lock:
            return self._oauth.refused
