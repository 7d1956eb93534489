"""The durable state of each backfill: the SQLite ledger written on every change
(``ledger``, its records ``records``, ``ledger_store``, ``ledger_ids``), the journal of
a detached backfill in the workspace (``journal``, ``journal_store``, ``journal_read``,
``place``, ``journal_control``), its attempts read back as run observations
(``observations``), problems with dbxdec's own files (``local_state``) and the exact
rerun and resume commands a ledger leads to (``commands``). May import :mod:`..plan` (a
ledger records a plan and its pacing), the layers above ``launch`` and the SDK (the
journal's Workspace API calls).
"""
