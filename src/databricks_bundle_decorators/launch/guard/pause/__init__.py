"""The pauses a backfill holds on jobs that start runs on their own, part of the
``guard`` room, over the markers of :mod:`...ledger.marker`: one hold and restore path
(``schedule_pause``: a job's schedule, trigger or continuous run), a ``--downstream``
backfill's dependants' triggers paused while it writes, locally or detached
(``trigger_pause``), and the check made before anything is paused or started that whoever
will pause may edit each job (``pause_permission``). May import :mod:`...plan`,
:mod:`...ledger`, :mod:`...workspace`,
:mod:`...backends` and the layers above ``launch``; of ``guard``, ``connection`` imports it.
"""
