"""Estimates before and while a backfill runs: wall time from past runs (``estimate``),
compute (``compute``), keys per run (``auto_batch``), the local Spark's start-up
(``local_startup``), DBUs from billing (``billed_estimate``) and ``dbxdec backfill
cost`` (``cost``). May import :mod:`..plan`, :mod:`..ledger`, :mod:`..workspace`,
:mod:`..backends`, :mod:`..guard` and the layers above ``launch``.
"""
