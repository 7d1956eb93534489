"""What the command line prints: plans, launches, journals and reports as text.

Owns ``plan_output`` (a plan and its summary), ``downstream_output`` (a
``--downstream`` chain), ``launch_output`` (a launch's progress and outcome),
``detach_output`` (a detached backfill's hand-off), ``journal_output`` (the journal of a
backfill) and ``overdue_output`` (overdue jobs in a report). May import its own modules,
the ``inputs`` room and the layers above ``cli``; never ``commands`` or ``main``.
"""
