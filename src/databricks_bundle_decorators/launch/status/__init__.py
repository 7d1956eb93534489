"""What a person sees of a job's backfills: key states from ledgers, local runs and the
workspace's run history (``observed``, ``local_runs``, ``horizon``), ``dbxdec status``
and its grids (``status``, ``status_grid``, ``status_fold``, ``status_view``,
``status_details``), the timeline of one backfill (``timeline``) and the live progress
display (``progress``), the keys past their deadline (``overdue``) and a detached
backfill's journal read from any checkout (``journal_status``). May import every room
before it (:mod:`..plan` to :mod:`..prepare`; :mod:`..run`, whose events the progress
display draws) and the layers above ``launch``.
"""
