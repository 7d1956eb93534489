"""Operations on a job's data beyond running slices: ``dbxdec backfill undo`` and the
backfill's id its runs carry (``undo``), ``catchup --by data`` (``presence``),
``--full-refresh`` (``full_refresh``) and ``--downstream`` (``downstream``, its
triggers paused and caught up: ``downstream_triggers``, ``trigger_catch_up``). May
import every room before it in ``ROOMS`` and the layers above ``launch``.
"""
