"""A backfill's durable state, over one folder of small files (``place``: local or in the
workspace), used alike by the local launcher and the controller: the ledger written on
every change (``ledger``, its records ``records``, ``ledger_store``, ``ledger_ids``), the
journal of a detached backfill (``journal``, ``journal_store``, ``journal_read``,
``journal_control``), its lease -- the claim on its keys, local or in the workspace
(``claims``, ``claim_checks``, ``lease``) -- and its pause markers (``marker``); its
attempts read back as run observations (``observations``), problems with dbxdec's own
files (``local_state``) and the exact rerun and resume commands a ledger leads to
(``commands``). May import :mod:`..plan` (a ledger records a plan and its pacing),
:mod:`..workspace` (a workspace's failures in one line), the layers above ``launch`` and
the SDK (the journal's Workspace API calls).
"""
