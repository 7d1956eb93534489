"""The CSRF guard of every state-changing request: a form carries a token derived from the
browser's session cookie, which another site can neither read nor set.

The session cookie is random, ``HttpOnly`` and ``SameSite=Strict``; the form token is an
HMAC of it under a key that lives only in this process (OWASP's "signed double-submit
cookie"). A POST whose token does not match its cookie, or whose ``Origin`` names another
host, is refused before anything is read from the workspace.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

SESSION_COOKIE = "dbxdec_session"
FIELD = "csrf"


class CsrfGuard:
    """Issues and checks form tokens for one server process."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    @staticmethod
    def new_session() -> str:
        """A fresh session cookie value."""
        return secrets.token_urlsafe(24)

    def token(self, session: str) -> str:
        """The form token of ``session``."""
        return hmac.new(self._key, session.encode(), hashlib.sha256).hexdigest()

    def refusal(self, session: str | None, token: str | None, origin: str | None, host: str) -> str:
        """Why a POST is refused, or ``""`` when it may go on.

        Example:
            >>> guard = CsrfGuard()
            >>> guard.refusal("s", guard.token("s"), None, "127.0.0.1:8000")
            ''
            >>> guard.refusal("s", "forged", None, "127.0.0.1:8000")[:24]
            'refused: the form token '
        """
        if origin and origin != "null" and urlsplit(origin).netloc != host:
            return f"refused: the request came from another site ({origin})"
        if not session or not token or not hmac.compare_digest(self.token(session), token):
            return (
                "refused: the form token does not match this browser's session (a forged or "
                "stale request); reload the page and try again"
            )
        return ""
