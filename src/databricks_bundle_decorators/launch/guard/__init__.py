"""What keeps a backfill safe to start and to run beside others, over the lease and
markers of :mod:`..ledger`: the same command again pointed at ``--resume`` (``reruns``),
connecting to the deployed job, which restores stale pauses (``connection``); for a
``--downstream`` backfill, one claim per job (``job_claims``) and each job's deployment and
backend (``downstream_workspace``). The subpackage ``pause`` holds the pauses: the job's
schedule paused or given a slot, and a ``--downstream`` backfill's dependants' data
triggers paused while it writes, held by the launcher's process or, for a detached
backfill, by its controller run in the workspace. May import :mod:`..plan`,
:mod:`..ledger`, :mod:`..workspace` and :mod:`..backends` and the layers above ``launch``.
"""
