"""A backfill while it runs: the scheduler and what it drives -- slots and flights
(``scheduler``, ``submissions``, ``flights``, ``run_ends``), Ctrl-C
(``interrupts``), events and the end summary (``events``, ``summary``), and the
scheduler's parts: ``--downstream``'s ready set and blocking (``blocking``) and a
controller run's steering (``steering``), which see the scheduler through ``loop``.
May import :mod:`..plan`, :mod:`..ledger`, :mod:`..workspace`, :mod:`..backends`,
:mod:`..guard`, :mod:`..estimate` and :mod:`..policy` and the layers above ``launch``.
"""
