"""EAMS: measure and cut the energy a Kubernetes cluster spends per unit of work.

The components follow the data flow ``meter → calibrate → agent → scheduler``
(see ``docs/architecture.md`` and ``../shared/DESIGN.md``):

- :mod:`eams.meter` reads per-outlet power from metered PDUs and serial meters;
- :mod:`eams.calibrate` fits each node's power model from stress-ng sweeps and runs the
  VT-5 wall-power check;
- :mod:`eams.agent` publishes age-stamped power headroom;
- :mod:`eams.scheduler` places pods with an energy-aware ε-auction behind a kube-scheduler
  extender, and benchmarks it.

:mod:`eams.demo` runs all four end to end on a virtual testbed; it sits on top (nothing imports
it). The rest of this package is the ground every component imports: errors, the data folder,
``/proc/stat`` utilisation and the ``eams`` command.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
