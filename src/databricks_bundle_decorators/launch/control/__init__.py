"""The controller of a detached backfill, which runs in the workspace (issue 28).

The last room of ``launch/`` (see :data:`..ROOMS`): it imports every room
before it and the layers above ``launch/``, and nothing imports it but the facade and
the CLI. ``dbxdec-controller`` (:mod:`.entry`) is the wheel entry point of the generated
``dbxdec_controller`` job: one run of it drives one backfill from its journal with the
same scheduler the local launcher uses, steered (:mod:`.controller`), hands over
to a fresh run of itself after a few hours (:mod:`.handover`), and authenticates as the
job run may (:mod:`.auth`).

Its modules: ``entry`` (the entry point), ``controller`` (one run
driving the backfill, steered by pause/cancel ops), ``handover``, ``auth``, ``detach``
(``--detach``: hand a planned backfill to a controller run), ``trigger_hold`` (a
detached ``--downstream`` backfill's dependants' triggers, held by every generation and
restored by the last), and ``lost`` (a run that lost
the claim never takes the backfill back). The takeover tests' kill points live in the
tests (``tests/launch/killing_controller.py``), not here.
"""
