"""What a person sees of a job's backfills: key states (``observed``, ``local_runs``),
``dbxdec status`` and its grids (``status``, ``status_grid``, ``status_view``), a
backfill's ``timeline``, live ``progress``, keys past their deadline (``overdue``) and a
detached backfill's journal (``journal_status``). May import every room before it and
the layers above ``launch``.
"""
