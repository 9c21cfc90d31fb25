"""``eams demo``: the whole toolkit end to end on a virtual six-node testbed.

The demo sits on top of every component (meter, calibrate, agent, scheduler) and nothing of
ours imports it. One job per module, in the order a run uses them:

- :mod:`~eams.demo.cli` — the click command (imports the stages only when it runs);
- :mod:`~eams.demo.run` — the four stages in order and what they print;
- :mod:`~eams.demo.fleet` — the six nodes' hidden power curves (SPECpower, or built in);
- :mod:`~eams.demo.testbed` — virtual nodes (load, ``/proc/stat``, stress-ng) behind the PDU
  simulator;
- :mod:`~eams.demo.calibrate` — the real sweep and fit of every node through the real meter;
- :mod:`~eams.demo.workload` — the trace and each scheduler's placements (bench harness);
- :mod:`~eams.demo.services` — the extender and the agents, in threads;
- :mod:`~eams.demo.replay` — a planned run played on the virtual nodes in compressed time;
- :mod:`~eams.demo.report` — the VT-5 wall-power check and the summary;
- :mod:`~eams.demo.errors` — :class:`~eams.demo.errors.DemoError`.
"""
