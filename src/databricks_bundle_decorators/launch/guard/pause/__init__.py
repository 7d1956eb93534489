"""The pauses a backfill holds on jobs that start runs on their own: a job's schedule,
trigger or continuous run (``schedule_pause``), a ``--downstream`` backfill's dependants'
triggers (``trigger_pause``), and the permission check made first
(``pause_permission``). May import :mod:`...plan`, :mod:`...ledger`, :mod:`...workspace`,
:mod:`...backends` and the layers above ``launch``; of ``guard``, ``connection`` imports it.
"""
