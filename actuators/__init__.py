"""The power-state actuators: wake, suspend and power off nodes, safely (issue 31).

One module per job: :mod:`.inventory` (which node sleeps and wakes how, which never sleeps),
:mod:`.safety` (what is refused and why, in front of every method), :mod:`.transitions` (the
log line and the Prometheus counter), :mod:`.steps` (``systemctl`` over SSH, an outlet switched
and read back, a magic packet), :mod:`.methods` (one module per method and
:data:`~.methods.METHODS`, the one table of them) and :mod:`.actions` (the façade:
safety, plan, steps, one transition each). ``eams power`` and the power manager drive them;
``eams calibrate power-states`` measures what each transition costs. Nothing is imported here.
"""
