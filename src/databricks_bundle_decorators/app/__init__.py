"""The backfill app: every backfill, one backfill's grid and timeline, a job's partition
health, and launching and steering backfills, in a browser.

One Starlette application (:mod:`.server`) serves the same pages in two places: on this
machine (``dbxdec app``, loopback only, with the project's local ledgers and the
credentials ``dbxdec`` uses) and as a Databricks App (``python -m
databricks_bundle_decorators.app``, from the ``app.yaml`` that ``dbxdec generate`` writes),
where every workspace call is made with the viewer's own token (user authorization).

Layer: between ``launch`` (whose read models and operations it calls) and ``cli``; may
import ``launch`` and the layers above it, never ``cli`` or ``testing``. Owns ``server``
(routes, the CSRF and refusal wrapper), ``reading`` (what pages show), ``acting`` (what
they change), ``viewer`` (who is looking, through which credentials), ``settings``,
``scopes`` (the ``user_api_scopes`` it needs), ``csrf``, ``serving`` (uvicorn, ports,
SIGTERM) and ``__main__`` (the Databricks App entry); ``templates/`` (Jinja2) and
``static/`` (CSS, the live-update script) ship in the wheel.
"""
