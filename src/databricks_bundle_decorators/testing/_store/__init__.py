"""The Jobs API emulator's store: ``_emulator_refs`` (dynamic value references),
``_emulator_records`` (records, clock, list order and pages), ``_emulator_settings`` (job
settings: create, update, reset), ``_emulator_render`` (records as API JSON) and
``_emulator_state`` (the state the endpoints act on). The lowest room of ``testing``: it
imports no other room and no flat module, only the layers above ``testing``.
"""
