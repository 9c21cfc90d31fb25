"""``eams demo``: the whole toolkit end to end on a virtual six-node testbed.

The demo sits on top of every component (meter, calibrate, agent, scheduler) and nothing of
ours imports it. One job per module, in the order a run uses them:

- :mod:`~eams.demo.cli` — the click command (imports the stages only when it runs);
- :mod:`~eams.demo.run` — the four stages in order and what they print;
- :mod:`~eams.demo.fleet` — the six nodes' hidden power curves (SPECpower, or built in);
- :mod:`~eams.demo.testbed` — virtual nodes (load, ``/proc/stat``, stress-ng, power states)
  behind the PDU simulator;
- :mod:`~eams.demo.calibrate` — the real sweep and fit of every node through the real meter,
  and the measurement of the power states of every node that may sleep;
- :mod:`~eams.demo.workload` — the trace at each offered load, and the harness's view of the
  testbed;
- :mod:`~eams.demo.services` — the extender and the agents, in threads;
- :mod:`~eams.demo.cluster` — the emulated cluster: Node objects, taints, cordons, bound pods;
- :mod:`~eams.demo.live` — one run placed live by the emulated kube-scheduler cycle;
- :mod:`~eams.demo.power` — the power manager's ports over the emulated cluster and the
  simulator;
- :mod:`~eams.demo.runs` — the four runs of each offered load, metered; the extender of an
  EAMS run wired to the emulated cluster (nodes, wake requests);
- :mod:`~eams.demo.record` — the demo's side of the decision record (the extender writes the
  placements): the energy attributed to each EAMS pod;
- :mod:`~eams.demo.report` — the VT-5 wall-power check, the answer and the summary;
- :mod:`~eams.demo.errors` — :class:`~eams.demo.errors.DemoError`.
"""
