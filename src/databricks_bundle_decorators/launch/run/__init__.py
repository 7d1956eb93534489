"""A backfill while it runs: the scheduler and what it drives -- slots and flights
(``scheduler``, ``take_up``, ``flights``, ``run_ends``), status polls (``status_poller``,
``poll_policy``), outages, retries and canaries (``outage``, ``retry_budget``,
``canary``), Ctrl-C (``interrupts``), events and the end summary (``events``,
``summary``), re-chosen batch sizes (``rebatch``) and a prepared or resumed backfill
(``prepared``, ``resume``). May import :mod:`..plan`, :mod:`..ledger`,
:mod:`..backends`, :mod:`..guard` and :mod:`..estimate` and the layers above ``launch``.
"""
