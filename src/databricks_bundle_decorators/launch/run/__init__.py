"""A backfill while it runs: the scheduler and what it drives -- slots and flights
(``scheduler``, ``take_up``, ``flights``, ``run_ends``), Ctrl-C (``interrupts``), events
and the end summary (``events``, ``summary``), and ``--downstream``'s ready set and
blocking (``downstream_scheduler``, ``blocking``). May import :mod:`..plan`,
:mod:`..ledger`, :mod:`..workspace`, :mod:`..backends`, :mod:`..guard`,
:mod:`..estimate` and :mod:`..policy` and the layers above ``launch``.
"""
