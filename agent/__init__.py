"""The node agent: age-stamped power and headroom samples into InfluxDB, nothing lost.

The agent produces the telemetry record but does not own it: the record, its invariants and its
wire forms are :mod:`eams.telemetry`, which the extender and the wall-power check read too. The
names below are the agent's public surface: what it publishes.
"""

from eams.telemetry import MEASUREMENT, PowerSource, TelemetrySample

__all__ = ["MEASUREMENT", "PowerSource", "TelemetrySample"]
