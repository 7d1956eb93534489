"""What the scheduler decides by, each rule on its own: when to poll (``poll_policy``),
when the workspace is out rather than a run failed (``outage``), retries left
(``retry_budget``) and canaries (``canary``). May import :mod:`..plan`, :mod:`..ledger`,
:mod:`..workspace`, :mod:`..backends`, :mod:`..guard`, :mod:`..estimate` and the layers
above ``launch``.
"""
