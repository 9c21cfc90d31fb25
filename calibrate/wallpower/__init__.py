"""The VT-5 wall-power check: do the savings the model predicts appear at the wall?

For two runs (scheduler A and B, each a time window of agent telemetry from JSONL files or
InfluxDB), integrate each node's metered energy (PDU counter, else power samples) and modelled
energy (calibrated P(u) on the measured utilisation), and compare the metered saving with the
modelled one: PASS within ±3 points (study §9, VT-5). See ``calibrate/wallpower/README.md``.
"""

from eams.calibrate.wallpower.check import SavingCheck, check_runs
from eams.calibrate.wallpower.errors import (
    InfluxUnreachable,
    RunDataError,
    RunMismatchError,
    RunSpecError,
    WallPowerError,
)
from eams.calibrate.wallpower.fleet import load_fleet
from eams.calibrate.wallpower.load import Run, load_run
from eams.calibrate.wallpower.nodes import NodeModel
from eams.calibrate.wallpower.report import write_report
from eams.calibrate.wallpower.spec import RunSpec, parse_run_spec

__all__ = [
    "InfluxUnreachable",
    "NodeModel",
    "Run",
    "RunDataError",
    "RunMismatchError",
    "RunSpec",
    "RunSpecError",
    "SavingCheck",
    "WallPowerError",
    "check_runs",
    "load_fleet",
    "load_run",
    "parse_run_spec",
    "write_report",
]
