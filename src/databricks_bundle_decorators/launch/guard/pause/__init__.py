"""The pauses a backfill holds on jobs that start runs on their own, part of the
``guard`` room: one marker kind over a :mod:`...ledger.place` (``marker``: what was
paused, who holds it, whether the holder still runs -- a local process or a detached
backfill's controller runs), one hold and restore path (``schedule_pause``: a job's
schedule, trigger or continuous run), and a ``--downstream`` backfill's dependants'
triggers paused while it writes, locally or detached (``trigger_pause``), and the check
made before anything is paused or started that whoever will pause may edit each job
(``pause_permission``). May import the
rest of ``guard`` (``claims``), :mod:`...plan`, :mod:`...ledger`, :mod:`...workspace`,
:mod:`...backends` and the layers above ``launch``; of ``guard``, ``connection`` imports it.
"""
