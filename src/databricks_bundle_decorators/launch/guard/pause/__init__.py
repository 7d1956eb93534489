"""The pauses a backfill holds on jobs that start runs on their own, part of the
``guard`` room: a job's schedule, trigger or continuous run paused or given a slot for a
backfill (``schedule_pause``), the local markers that say which process holds each pause
(``pause_markers``), a ``--downstream`` backfill's dependants' data triggers paused while
it writes (``trigger_pause``), and for a detached backfill the same pauses held in the
workspace (``workspace_pause``) by markers whose holder is the backfill's controller run
(``workspace_markers``). May import the rest of ``guard`` (``claims``), :mod:`...plan`,
:mod:`...ledger`, :mod:`...workspace`, :mod:`...backends` and the layers above
``launch``; of ``guard``, ``connection`` imports it.
"""
