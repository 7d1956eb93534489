"""The Jobs API emulator's store: its records, clock, ordering, rendering and state.

Owns ``_emulator_limits`` (documented API limits), ``_emulator_refs`` (dynamic value
references), ``_emulator_records`` (job, run and task records), ``_emulator_clock``
(the emulator's clock), ``_emulator_order`` (listing order and pagination),
``_emulator_render`` (records as API JSON), ``_emulator_settings`` (``jobs/update`` and
``jobs/reset``), ``_emulator_output`` (``runs/get-output``), ``_emulator_for_each`` (the
iterations of for-each task runs) and ``_emulator_state`` (the state the endpoints act
on). The lowest room of ``testing``: it imports no other room of ``testing`` and no flat
module (``emulator``, ``spark_connect``), only the layers above
``testing`` and the shared errors.
"""
