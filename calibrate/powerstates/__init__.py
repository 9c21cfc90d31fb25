"""The power-state measurement: what a node draws asleep and what each transition costs
(issue 13), measured by driving the power-state actuators (:mod:`eams.actuators`).

One module per job (see ``calibrate/README.md``): :mod:`.record` (the calibration file's
``power_states``, schema 2), :mod:`.trace` (the outlet read on its own thread),
:mod:`.estimate`, :mod:`.probes` (is the node back?), :mod:`.measure` and :mod:`.run` (``eams
calibrate power-states``). Nothing is imported here, so loading a calibration file (which
reads :mod:`.record`) imports no SSH, SNMP or Kubernetes client.
"""
