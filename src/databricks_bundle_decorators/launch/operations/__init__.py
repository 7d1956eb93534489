"""Operations on a job's data beyond running slices: ``dbxdec backfill undo`` (``undo``,
its runs carrying the backfill's id ``identity``), ``catchup --by data``
(``presence``), ``--full-refresh`` (``full_refresh``) and ``--downstream``
(``downstream``, its triggers paused and caught up ``downstream_triggers``,
``trigger_catch_up``). May import every room before it
in ``ROOMS`` and the layers above ``launch``; the facade :mod:`..launcher`,
:mod:`..control` and the CLI import it.
"""
