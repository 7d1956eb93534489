"""Client-side backfill orchestration: plan, scheduler, backends, ledger, progress.

Modules (import what you need; nothing heavy is imported here):

- :mod:`.plan` -- keys, ranged batches, order and job parameters of a backfill;
- :mod:`.history` -- key states (succeeded/failed/running/missing/unknown) from past runs;
- :mod:`.ledger` -- the durable, atomically written state of each backfill;
- :mod:`.scheduler` and :mod:`.pacing` -- concurrency cap, retries, batched polling;
- :mod:`.backends`, :mod:`.databricks_backend`, :mod:`.local_backend` -- where runs happen;
- :mod:`.progress` and :mod:`.events` -- live, plain and JSON progress, the summary;
- :mod:`.launcher`, :mod:`.status` -- what ``dbxdec backfill``/``catchup``/``status`` do.
"""
