"""A backfill's durable state over one folder (``place``: local or in the workspace, and
the failures of dbxdec's own files), used alike by the local launcher and the
controller: the ledger, its records, its SQLite store and its rerun and resume commands
(``ledger``), the journal of a detached backfill and its steering requests
(``journal``), its lease (``claims``, ``lease``) and its pause markers (``marker``). May
import :mod:`..plan`, :mod:`..workspace`, the layers above ``launch`` and the SDK.
"""
