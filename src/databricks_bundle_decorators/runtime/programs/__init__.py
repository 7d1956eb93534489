"""The programs of the kinds of run ``dbxdec-run`` performs: the kinds decoded once from
the wire parameters (``run_kinds``), an ordinary or staging run (``task_run``, with
``task_subset`` for some of a job's tasks), presence counts (``presence``), undo
(``undo``), a full refresh's swap (``full_refresh``) and how a canary run changed its
keys, for the diff gate (``measure``). A kind's module imports
``run_kinds``, never another kind's module. May import every room before it
(:mod:`..core` to :mod:`..job_tables`) and the layers above ``runtime``.
"""
