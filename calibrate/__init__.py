"""Per-node power models: stress-ng load sweeps, robust P_idle/P_max fits, calibration files,
and the VT-5 wall-power check that compares metered with modelled savings."""
