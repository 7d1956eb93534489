"""What the scheduler decides by, each rule on its own: when to poll a run's status
(``poll_policy``, ``status_poller``), when the workspace is out rather than a run failed
(``outage``), how many retries a slice has left (``retry_budget``) and whether a canary
run let the rest go (``canary``). May import :mod:`..plan`, :mod:`..ledger`,
:mod:`..workspace`, :mod:`..backends`, :mod:`..guard` and :mod:`..estimate` and the
layers above ``launch``; :mod:`..run` builds on it.
"""
