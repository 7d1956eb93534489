"""The controller of a detached backfill, run in the workspace: ``entry`` (the wheel entry
point ``dbxdec-controller`` and its authentication), ``controller`` (one run driving the
backfill from its journal, steered, handing over to the next generation; a run that
lost the claim never takes it back), ``detach`` (``--detach``: hand a planned backfill
to a controller run) and ``trigger_hold`` (a detached ``--downstream`` backfill's
dependants' triggers). The last room: it may import every room before it and the layers
above ``launch``.
"""
