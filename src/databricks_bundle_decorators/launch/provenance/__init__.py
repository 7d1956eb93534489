"""What each key was computed from, and which keys are stale: the provenance index of a
table, rebuilt from its history and kept in the ledger room's place (``index``), and the
judgment of ``dbxdec stale`` (``stale``), what ``dbxdec restate`` recomputes and why
(``restate``), and one job's keys as ``dbxdec status`` and the app show them
(``job_keys``). May import :mod:`..plan`,
:mod:`..workspace`, :mod:`..ledger` and the layers above ``launch``.
"""
