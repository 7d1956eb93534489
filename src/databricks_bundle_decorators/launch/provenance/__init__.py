"""What each key was computed from, and which keys are stale: the provenance index of a
table, rebuilt from its history and kept in the ledger room's place (``index``), and the
judgment of ``dbxdec stale`` (``stale``), and what ``dbxdec restate`` recomputes
and why (``restate``). May import :mod:`..plan`,
:mod:`..workspace`, :mod:`..ledger` and the layers above ``launch``.
"""
