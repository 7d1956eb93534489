"""A backfill while it runs: the scheduler (``scheduler``) and its attempts in flight, the
face of the scheduler its parts see, submissions and ends (``flights``), Ctrl-C
(``interrupts``), events and the end summary (``events``, ``summary``), ``--downstream``'s
ready set (``blocking``) and a controller run's steering (``steering``). May import
:mod:`..plan`, :mod:`..ledger`, :mod:`..workspace`, :mod:`..backends`, :mod:`..guard`,
:mod:`..estimate` and :mod:`..policy` and the layers above ``launch``.
"""
