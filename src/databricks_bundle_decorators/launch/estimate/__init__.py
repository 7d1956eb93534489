"""Estimates before and while a backfill runs: wall time from past runs, what a run runs
on and the local Spark's start-up (``estimate``), keys per run (``auto_batch``), and
DBUs from billing, a dry run's and ``dbxdec backfill cost``'s (``cost``). May import
:mod:`..plan`, :mod:`..ledger`, :mod:`..workspace`, :mod:`..backends`, :mod:`..guard`
and the layers above ``launch``.
"""
