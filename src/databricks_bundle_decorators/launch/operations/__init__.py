"""Operations on a job's data beyond running slices: ``dbxdec backfill undo`` (``undo``,
``ledger_undone``, on Databricks ``remote_undo``), ``catchup --by data``
(``presence``), ``--full-refresh`` (``full_refresh``) and ``--downstream``
(``downstream``, its triggers paused and caught up ``downstream_triggers``,
``trigger_catch_up``, its undo ``downstream_undo``). May import every room before it
in ``ROOMS`` and the layers above ``launch``; the facade :mod:`..launcher`,
:mod:`..control` and the CLI import it.
"""
