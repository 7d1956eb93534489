"""The backfill app: every backfill, one backfill's grid and timeline, a job's partition
health, and launching and steering backfills, in a browser.

One Starlette application (:mod:`.server`) serves the same pages in two places: on this
machine (``dbxdec app``, loopback only, with the project's local ledgers and the
credentials ``dbxdec`` uses) and as a Databricks App (``python -m
databricks_bundle_decorators.app``, from the ``app.yaml`` that ``dbxdec generate`` writes),
where every workspace call is made with the viewer's own token (user authorization).

Layer: between ``launch`` (whose read models and operations it calls) and ``cli``.
"""
