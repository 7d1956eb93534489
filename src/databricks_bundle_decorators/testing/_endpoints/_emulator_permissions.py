"""Who calls and what they may do: the jobs Permissions API (read side), SCIM ``Me`` and
lists, job ACLs enforced, and OAuth M2M tokens of service principals.

**Permissions.** ``GET /api/2.0/permissions/jobs/{job_id}`` answers a ``JobPermissions``
object as databricks-sdk-py documents it (``jobs.JobPermissions``; each
``JobAccessControlResponse`` names one principal and lists its ``all_permissions``);
``WorkspaceClient.jobs.get_permissions`` sends exactly this request ("Jobs can inherit
permissions from their root object", its docstring). By default
(https://docs.databricks.com/aws/en/jobs/privileges, "Default privileges for jobs") the
creator has ``IS_OWNER`` and workspace admins ``CAN_MANAGE``, shown as the system group
``admins`` (https://docs.databricks.com/aws/en/admin/users-groups/groups: "each workspace
has two system groups: users and admins") inherited from the root object ``/jobs/``.
Where the reference is silent, the least convenient legal answer: a caller holding no
level on the job is refused the read (403 ``PERMISSION_DENIED``); a principal with a
direct and an inherited grant is listed once with both levels; ``Me`` lists only the
groups set with :meth:`PermissionControls.answer_me_as`, as SCIM 2.0 ``groups`` values
(RFC 7643 section 4.1.2; the Databricks SCIM API follows SCIM 2.0,
https://docs.databricks.com/aws/en/admin/users-groups/scim/), nested groups not expanded.

**Enforced** once a test set an ACL or answered as someone else: the jobs access-control
table ("Job ACLs", https://docs.databricks.com/aws/en/security/auth/access-control, read
as https://docs.azure.cn/en-us/databricks/security/auth-authz/access-control/jobs-acl)
grants *Run now* and *Cancel run* from CAN MANAGE RUN up, *Edit job settings* to IS OWNER
and CAN MANAGE (:data:`GUARDED`). Admins pass ("Workspace admins have the CAN MANAGE
permission on all jobs", same page). The creator stays ``IS_OWNER`` when a test's grants
name no owner ("A job cannot have more than one owner", the jobs-acl page; "The job must
have exactly one owner.", databricks/cli#3849). A refusal is 403 ``PERMISSION_DENIED`` in
the workspace's words (databricks/cli#900: "<principal> does not have Owner permissions
on <object>. Please contact the owner or an administrator for access.").

**SCIM lists.** ``GET .../scim/v2/Users`` and ``.../ServicePrincipals`` with a ``filter``
``userName eq "..."`` / ``applicationId eq "..."`` (the SDK's ``users.list``: "Supported
operators are equals(eq) ...", RFC 7644 section 3.4.2.2) answer a ``ListResponse`` of the
principals a test named with :meth:`PermissionControls.set_principal_groups` (and the
caller); the SDK pages with ``startIndex`` until ``Resources`` is empty.

**OAuth M2M** (https://docs.databricks.com/aws/en/dev-tools/auth/oauth-m2m, "Manually
generate a workspace-level access token"): ``POST /oidc/v1/token`` with the client ID and
secret as HTTP Basic credentials and ``grant_type=client_credentials&scope=all-apis``
answers ``{"access_token", "token_type": "Bearer", "expires_in": 3600, "scope"}``. The
SDK's ``oauth-m2m`` (``credentials_provider.oauth_service_principal``) finds the token
endpoint through ``/oidc/.well-known/oauth-authorization-server``
(``oauth.get_workspace_endpoints``). A wrong client ID or secret is 401
``invalid_client``, another grant 400 ``unsupported_grant_type`` (RFC 6749 section 5.2;
the SDK raises ``ValueError("invalid_client: ...")``, ``oauth.retrieve_token``). An
issued token authorizes requests as its service principal (logged in
:attr:`OAuthModel.calls`; never a secret or a token). Not modelled: token expiry.

**Users' tokens.** :meth:`PermissionControls.add_user_token` makes a bearer token authorize
requests as a workspace user (SCIM ``Me`` answers as them, job ACLs are checked against them
and their groups): a personal access token, or the OAuth token the Databricks Apps proxy
forwards to an app in ``x-forwarded-access-token`` under user authorization ("the app
receives the user's access token ... in the x-forwarded-access-token header",
https://docs.databricks.com/aws/dev-tools/databricks-apps/auth), which the app sends on as
``Authorization: Bearer``. Their requests are logged in :attr:`OAuthModel.calls` under the
user's name. Not modelled: scopes of the token (the app's own ``user_api_scopes`` check).
"""

from __future__ import annotations

import base64
import re
import secrets
import threading
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qs

from .._store._emulator_render import scim_me_json
from .._store._emulator_state import ApiError, JobsModel, JsonDict

SCIM_ME = "/api/2.0/preview/scim/v2/Me"
SCIM_USERS = "/api/2.0/preview/scim/v2/Users"
SCIM_SERVICE_PRINCIPALS = "/api/2.0/preview/scim/v2/ServicePrincipals"
JOB_LEVELS = ("CAN_VIEW", "CAN_MANAGE_RUN", "IS_OWNER", "CAN_MANAGE")  # jobs.JobPermissionLevel
ADMINS = "admins"
USERS = "users"
PrincipalKind = Literal["user", "group", "service_principal"]
RUN_LEVELS = ("CAN_MANAGE_RUN", "IS_OWNER", "CAN_MANAGE")
EDIT_LEVELS = ("IS_OWNER", "CAN_MANAGE")
GUARDED = {  # Jobs API endpoint -> the levels that allow it (the jobs access-control table)
    "run-now": RUN_LEVELS,
    "runs/cancel": RUN_LEVELS,
    "runs/cancel-all": RUN_LEVELS,
    "update": EDIT_LEVELS,
    "reset": EDIT_LEVELS,
}
_LEVEL_WORDS = {"CAN_MANAGE_RUN": "Manage Run", "IS_OWNER": "Owner", "CAN_MANAGE": "Manage"}
_FILTER = re.compile(r'\s*(userName|applicationId)\s+eq\s+"([^"]*)"\s*', re.IGNORECASE)
_PATH = re.compile(r"/api/2\.0/permissions/jobs/(\d+)")
_KIND_FIELD = {
    "user": "user_name",
    "group": "group_name",
    "service_principal": "service_principal_name",
}


@dataclass(frozen=True, slots=True)
class Grant:
    """One principal's direct level on a job."""

    kind: PrincipalKind
    name: str
    level: str


@dataclass
class PermissionsModel:
    """Job ACLs and the caller's groups; the caller holds the emulator's lock. ``owner``
    created the jobs nobody set an ACL on (the first caller); ``members``: principals
    other than the caller -> their groups."""

    acls: dict[int, list[Grant]] = field(default_factory=dict)
    groups: tuple[str, ...] = (USERS,)
    owner: str | None = None
    enforcing: bool = False  # a test set an ACL, or changed the caller
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def groups_of(self, principal: str, caller: str) -> tuple[str, ...]:
        """The groups ``principal`` is directly in (``caller``: the configured caller)."""
        if principal == caller:
            return self.groups
        return (USERS, *(g for g in self.members.get(principal, ()) if g != USERS))

    def require(self, endpoint: str, job_id: int, caller: str, configured: str) -> None:
        """Refuse ``caller`` the Jobs API ``endpoint`` on job ``job_id`` without a level
        that allows it; ``configured``: the emulator's caller."""
        needed = GUARDED.get(endpoint)
        if needed is None or not self.enforcing:
            return
        owner = self.owner or configured
        grants = self.acls.get(job_id, [])
        if not any(g.level == "IS_OWNER" for g in grants):
            grants = [*grants, Grant(_kind(owner), owner, "IS_OWNER")]
        groups = self.groups_of(caller, configured)
        mine = {(_kind(caller), caller), *(("group", g) for g in groups)}
        held = {g.level for g in grants if (g.kind, g.name) in mine}
        if ADMINS in groups:
            held.add("CAN_MANAGE")
        if not held & set(needed):
            raise ApiError(
                403,
                "PERMISSION_DENIED",
                f"{caller} does not have {_LEVEL_WORDS[needed[0]]} permissions on Job "
                f"{job_id}. Please contact the owner or an administrator for access.",
            )

    def scim_list(self, path: str, query: Mapping[str, str], caller: str) -> JsonDict:
        """``GET`` SCIM ``Users`` or ``ServicePrincipals`` (see the module docstring)."""
        match = _FILTER.fullmatch(query.get("filter", ""))
        users = path == SCIM_USERS
        if match is None or (match.group(1).lower() == "username") != users:
            wanted = 'userName eq "..."' if users else 'applicationId eq "..."'
            raise ApiError(400, "INVALID_PARAMETER_VALUE", f"Unsupported filter: expected {wanted}")
        name = match.group(2)
        known = {caller, self.owner or caller, *self.members}
        found: list[JsonDict] = []
        start = int(query.get("startIndex") or 1)
        if name in known and ("@" in name) == users and start <= 1:
            field_name = "userName" if users else "applicationId"
            kind = "User" if users else "ServicePrincipal"
            found.append(
                {
                    "id": f"p-{zlib.crc32(name.encode())}",
                    field_name: name,
                    "displayName": name.split("@")[0],
                    "active": True,
                    "groups": _group_values(self.groups_of(name, caller)),
                    "schemas": [f"urn:ietf:params:scim:schemas:core:2.0:{kind}"],
                }
            )
        return {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
            "totalResults": len(found),
            "itemsPerPage": len(found),
            "startIndex": start,
            "Resources": found,
        }

    def answer(self, job_id: int, caller: str, configured: str | None = None) -> JsonDict:
        """``GET /api/2.0/permissions/jobs/{job_id}`` for ``caller`` (``configured``: the
        emulator's caller, when another principal's token made the request)."""
        self.owner = self.owner or caller
        grants = self.acls.get(job_id, [])
        if not any(g.level == "IS_OWNER" for g in grants):  # the creator stays the owner
            grants = [*grants, Grant(_kind(self.owner), self.owner, "IS_OWNER")]
        entries: dict[tuple[str, str], list[JsonDict]] = {}
        for grant in grants:
            entries.setdefault((grant.kind, grant.name), []).append(
                {"permission_level": grant.level, "inherited": False}
            )
        entries.setdefault(("group", ADMINS), []).append(
            {
                "permission_level": "CAN_MANAGE",
                "inherited": True,
                "inherited_from_object": ["/jobs/"],
            }
        )
        groups = self.groups_of(caller, configured or caller)
        mine = {(_kind(caller), caller), *(("group", g) for g in groups)}
        if not mine & set(entries):
            raise ApiError(
                403,
                "PERMISSION_DENIED",
                f"User {caller} does not have any permission on job {job_id}.",
            )
        acl = [
            {_KIND_FIELD[kind]: name, "all_permissions": levels}
            for (kind, name), levels in entries.items()
        ]
        return {"object_id": f"/jobs/{job_id}", "object_type": "job", "access_control_list": acl}


def _group_values(groups: Iterable[str]) -> list[JsonDict]:
    return [
        {"display": name, "value": f"g-{name}", "$ref": f"Groups/g-{name}", "type": "direct"}
        for name in groups
    ]


def _kind(principal: str) -> PrincipalKind:
    """A service principal calls with its application id, which is no email address."""
    return "user" if "@" in principal else "service_principal"


def route_identity(
    model: PermissionsModel,
    jobs: JobsModel,
    method: str,
    path: str,
    authorized: bool,
    principal: tuple[str, str] | None = None,
    query: Mapping[str, str] | None = None,
) -> JsonDict | None:
    """The answer to SCIM ``Me``, a SCIM list or a job's Permissions API read, else
    ``None``. ``principal``: the service principal (application id, display name) whose
    OAuth token the request carries, instead of the configured caller."""
    caller, display = principal or (jobs.user_name, jobs.display_name)
    if path == SCIM_ME and method == "GET":
        groups = model.groups_of(caller, jobs.user_name)
        return {**scim_me_json(caller, display), "groups": _group_values(groups)}
    if path in (SCIM_USERS, SCIM_SERVICE_PRINCIPALS) and method == "GET":
        if not authorized:
            raise ApiError(401, "UNAUTHENTICATED", "Invalid access token.")
        return model.scim_list(path, query or {}, jobs.user_name)
    match = _PATH.fullmatch(path)
    if method != "GET" or match is None:
        return None
    if not authorized:
        raise ApiError(401, "UNAUTHENTICATED", "Invalid access token.")
    job_id = int(match.group(1))
    jobs.get_job(job_id)  # an unknown job: the reference is silent; the Jobs API's own 400
    return model.answer(job_id, caller, jobs.user_name)


class PermissionControls:
    """Mixed into :class:`~..emulator.JobsEmulator`: ACLs, the caller, service principals."""

    _lock: threading.Lock
    _model: JobsModel
    _permissions: PermissionsModel
    _oauth: OAuthModel

    def set_job_permissions(
        self, job_id: int, grants: Iterable[tuple[PrincipalKind, str, str]]
    ) -> None:
        """Replace job ``job_id``'s direct ACL by ``grants``: ``(kind, name, level)``
        with kind ``"user"``, ``"group"`` or ``"service_principal"`` and a level of
        ``jobs.JobPermissionLevel``. The admins' inherited ``CAN_MANAGE`` stays."""
        chosen = [Grant(kind, name, level) for kind, name, level in grants]
        for grant in chosen:
            if grant.level not in JOB_LEVELS or grant.kind not in _KIND_FIELD:
                raise ValueError(f"not a job grant: {grant}")
        with self._lock:
            self._permissions.acls[job_id] = chosen
            self._permissions.enforcing = True

    def set_principal_groups(self, principal: str, groups: Iterable[str] = ()) -> None:
        """Make ``principal`` (a user's email or a service principal's application id) a
        workspace principal, a direct member of ``groups`` besides ``users``, as SCIM
        ``Users``/``ServicePrincipals`` list it (and ``Me`` when it calls by OAuth)."""
        with self._lock:
            self._permissions.members[principal] = tuple(dict.fromkeys(groups))

    def answer_me_as(
        self, user_name: str, *, groups: Iterable[str] = (), display_name: str = ""
    ) -> None:
        """Make the caller ``user_name`` (a user's email), a direct member of ``groups``
        besides the system group ``users``. Jobs keep their owner (the first caller)."""
        with self._lock:
            self._permissions.owner = self._permissions.owner or self._model.user_name
            self._model.user_name = user_name
            self._model.display_name = display_name or user_name.split("@")[0]
            self._permissions.groups = (USERS, *dict.fromkeys(g for g in groups if g != USERS))
            self._permissions.enforcing = True

    def answer_me_as_service_principal(self, application_id: str, display_name: str) -> None:
        """Make ``current_user.me()`` answer as a service principal: ``userName`` its
        application id (a UUID), ``displayName`` its display name, no email. Jobs keep
        their owner (the first caller)."""
        with self._lock:
            self._permissions.owner = self._permissions.owner or self._model.user_name
            self._model.user_name = application_id
            self._model.display_name = display_name
            self._permissions.enforcing = True

    def add_service_principal(
        self, application_id: str, secret: str, *, display_name: str = ""
    ) -> None:
        """Register a service principal that may get OAuth tokens with ``secret``."""
        principal = ServicePrincipal(application_id, secret, display_name or application_id)
        with self._lock:
            self._oauth.principals[application_id] = principal

    def add_user_token(
        self, token: str, user_name: str, *, groups: Iterable[str] = (), display_name: str = ""
    ) -> None:
        """Make bearer ``token`` authorize requests as user ``user_name`` (an email), a
        direct member of ``groups`` besides ``users``; job ACLs are enforced from now on."""
        if "@" not in user_name:
            raise ValueError(f"a user's name is an email address, not {user_name!r}")
        display = display_name or user_name.split("@")[0]
        with self._lock:
            self._oauth.users[token] = ServicePrincipal(user_name, "", display)
            self._permissions.members[user_name] = tuple(dict.fromkeys(groups))
            self._permissions.owner = self._permissions.owner or self._model.user_name
            self._permissions.enforcing = True

    def user_calls(self, user_name: str) -> list[tuple[str, str]]:
        """``(method, path)`` of every API request a token of user ``user_name`` authorized."""
        return self.service_principal_calls(user_name)

    def service_principal_calls(self, application_id: str) -> list[tuple[str, str]]:
        """``(method, path)`` of every API request a token of the principal authorized."""
        with self._lock:
            return [(m, p) for who, m, p in self._oauth.calls if who == application_id]

    @property
    def refused_token_requests(self) -> int:
        """How many token requests were refused (a wrong client ID or secret)."""
        with self._lock:
            return self._oauth.refused


# -- OAuth M2M -------------------------------------------------------------------------

DISCOVERY = "/oidc/.well-known/oauth-authorization-server"
TOKEN = "/oidc/v1/token"
AUTHORIZE = "/oidc/v1/authorize"
TOKEN_SECONDS = 3600  # "Each access token is valid for one hour" (the OAuth M2M page)


@dataclass(frozen=True, slots=True)
class ServicePrincipal:
    """A service principal with one OAuth secret."""

    application_id: str
    secret: str
    display_name: str


@dataclass
class OAuthModel:
    """Service principals, their tokens and the calls these authorized (lock held)."""

    principals: dict[str, ServicePrincipal] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)  # access token -> application id
    users: dict[str, ServicePrincipal] = field(default_factory=dict)  # token -> a user as caller
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (app id, method, path)
    refused: int = 0  # token requests refused (a wrong client ID or secret)

    def caller(self, authorization: str | None) -> ServicePrincipal | None:
        """The service principal whose issued token ``authorization`` carries."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme == "Bearer" and token in self.users:
            return self.users[token]
        found = self.tokens.get(token) if scheme == "Bearer" else None
        return self.principals.get(found) if found is not None else None

    def issue(self, authorization: str | None, form: bytes) -> tuple[int, JsonDict]:
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
