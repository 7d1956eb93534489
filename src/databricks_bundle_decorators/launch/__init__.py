"""Client-side backfill orchestration: plan, ledger, backends, guards, runs, status.

``launch/`` is split into rooms, one subpackage per responsibility. :data:`ROOMS` lists
them lowest first: a module of a room imports only from its own room, from rooms before
it in the list, and from the layers above ``launch`` (``tests/test_layers.py`` checks it,
``TYPE_CHECKING`` and function-level imports included). :mod:`.launcher` is the one
facade the CLI calls for ``dbxdec backfill``/``catchup``/``--resume``; it may import
every room, and no room imports it. Nothing heavy is imported here.

- :mod:`.plan` -- what a backfill is asked to do: keys, key states, runs, parameters, pacing;
- :mod:`.workspace` -- reaching a workspace: the client, ``-t TARGET``, billing reads;
- :mod:`.ledger` -- a backfill's durable state over one :class:`~.ledger.place.Place` (a
  local or a workspace folder): its ledger and journal, its lease (claims) and its pause
  markers, used alike by the local launcher and the controller;
- :mod:`.backends` -- where runs happen: the protocol, Databricks, local;
- :mod:`.guard` -- what keeps a backfill safe to start: a job's claims, its schedule's pause;
- :mod:`.estimate` -- how long a backfill will take, and keys per run;
- :mod:`.policy` -- what the scheduler decides by: polls, outages, retries, canaries;
- :mod:`.run` -- the scheduler and everything it drives while a backfill runs;
- :mod:`.prepare` -- a backfill made ready to run: prepared, re-batched, resumed;
- :mod:`.status` -- what a person sees: key states, the status grid, progress, timelines;
- :mod:`.operations` -- undo, catch-up by data, full refresh and ``--downstream``;
- :mod:`.steer` -- pause, unpause and cancel a detached backfill, resume from its journal;
- :mod:`.control` -- the controller of a detached backfill, run in the workspace.
"""

ROOMS = [
    "plan",
    "workspace",
    "ledger",
    "provenance",
    "backends",
    "guard",
    "estimate",
    "policy",
    "run",
    "prepare",
    "status",
    "operations",
    "steer",
    "control",
]
"""The rooms of ``launch/``, lowest first: a room imports only the rooms before it."""
