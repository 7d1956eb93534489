"""The backfill app served in-process for a test (uvicorn in a thread, a free loopback
port), and a small browser-less client that keeps the session cookie as a browser does."""

from __future__ import annotations

import http.cookiejar
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import uvicorn

from databricks_bundle_decorators.app.server import build_app
from databricks_bundle_decorators.app.serving import LOOPBACK, bind
from databricks_bundle_decorators.app.settings import AppSettings
from databricks_bundle_decorators.app.viewer import Viewers

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@contextmanager
def serving(settings: AppSettings, viewers: Viewers | None = None) -> Iterator[str]:
    """Serve the app of ``settings``; yields its base URL (``http://127.0.0.1:PORT``)."""
    sock = bind(LOOPBACK, 0)
    config = uvicorn.Config(build_app(settings, viewers=viewers), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    host, port = sock.getsockname()[:2]
    try:
        started = threading.Event()
        while not server.started and thread.is_alive():  # uvicorn sets it once it listens
            started.wait(0.01)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@dataclass
class Reply:
    status: int
    body: str
    headers: Mapping[str, str]


@dataclass
class Browserless:
    """GET and POST against the app with a cookie jar; ``headers`` go on every request
    (e.g. the forwarded token the Databricks Apps proxy adds)."""

    base: str
    headers: dict[str, str] = field(default_factory=dict)
    jar: http.cookiejar.CookieJar = field(default_factory=http.cookiejar.CookieJar)

    def _open(self, request: urllib.request.Request) -> Reply:
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect()
        )
        for name, value in self.headers.items():
            request.add_header(name, value)
        try:
            with opener.open(request, timeout=60) as response:
                return Reply(response.status, response.read().decode(), dict(response.headers))
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, exc.read().decode(), dict(exc.headers))

    def get(self, path: str) -> Reply:
        return self._open(urllib.request.Request(self.base + path))

    def post(self, path: str, fields: Mapping[str, str], *, csrf_from: str | None = None) -> Reply:
        """POST ``fields``; ``csrf_from``: a page whose form token is added first."""
        data = dict(fields)
        if csrf_from is not None:
            found = CSRF.search(self.get(csrf_from).body)
            assert found is not None, f"no form token on {csrf_from}"
            data["csrf"] = found.group(1)
        body = urllib.parse.urlencode(data).encode()
        request = urllib.request.Request(self.base + path, data=body, method="POST")
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
        return self._open(request)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None
