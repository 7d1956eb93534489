"""Operations on a job's data beyond running slices: ``dbxdec backfill undo`` (``undo``,
``ledger_undone``), ``catchup --by data`` (``presence``) and ``--full-refresh``
(``full_refresh``). The highest room: may import every other room and the layers above
``launch``; only the facade :mod:`..launcher` and the CLI import it.
"""
