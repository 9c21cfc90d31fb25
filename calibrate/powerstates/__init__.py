"""Node power states: the inventory, the actions that wake, suspend and power nodes off, the
rules that make them safe, and the measurement of what each transition costs (issue 13).

One module per job (see ``calibrate/README.md``): :mod:`.record` (the calibration file's
``power_states``, schema 2), :mod:`.inventory` (which node sleeps and wakes how),
:mod:`.safety` (what is refused
and why), :mod:`.transitions` (the log line and the Prometheus counter), :mod:`.actions` (the
façade: wake, suspend, power off), :mod:`.probes` (is the node back?), :mod:`.measure` (``eams
calibrate power-states``). Nothing is imported here, so loading a calibration file (which
reads :mod:`.record`) imports no SSH, SNMP or Kubernetes client.
"""
