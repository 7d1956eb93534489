"""The kinds of run ``dbxdec-run`` performs (``run_kinds``) and their programs: an
ordinary or staging run (``task_run``, with ``task_subset`` for some of a job's tasks),
``presence`` and ``measure`` reports, ``undo`` and a full refresh's swap
(``full_refresh``). May import the rooms before it (:mod:`..core` to :mod:`..job_tables`)
and the layers above ``runtime``.
"""
