"""What the command line prints: plans, launches, journals and reports as text.

Owns ``plan_output`` (a dry run's plan, ``--downstream`` chains), ``launch_output`` (a
launch's progress and outcome, ``--detach``) and ``journal_output`` (a backfill's journal,
overdue keys). May import its own modules, the ``inputs`` room and the layers above
``cli``; never ``commands`` or ``main``.
"""
