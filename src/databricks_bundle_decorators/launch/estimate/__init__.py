"""Estimates before and while a backfill runs: its wall time from past runs
(``estimate``), what a run runs on (``compute``), keys per run for ``--batch-size auto``
(``auto_batch``), the local Spark's start-up (``local_startup``) and what a dry run reads
(``dry_run``), and the DBUs from billing: a dry run's figure (``billed_estimate``) and
``dbxdec backfill cost`` (``cost``). May import :mod:`..plan`, :mod:`..ledger`,
:mod:`..workspace`, :mod:`..backends` and :mod:`..guard` (a dry run's connected job) and
the layers above ``launch``.
"""
