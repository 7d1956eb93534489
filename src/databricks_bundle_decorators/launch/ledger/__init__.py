"""The durable state of each backfill: the SQLite ledger written on every change
(``ledger``, ``ledger_store``, ``ledger_ids``), its attempts read back as run
observations (``observations``), problems with dbxdec's own files (``local_state``) and
the exact rerun and resume commands a ledger leads to (``commands``). May import
:mod:`..plan` (a ledger records a plan and its pacing) and the layers above ``launch``.
"""
