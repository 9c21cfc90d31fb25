"""The node agent: age-stamped power and headroom samples into InfluxDB, nothing lost.

The telemetry schema that dashboards, the extender and the wall-power check read is defined
once, in :mod:`eams.agent.schema`.
"""

from eams.agent.schema import MEASUREMENT, PowerSource, TelemetrySample

__all__ = ["MEASUREMENT", "PowerSource", "TelemetrySample"]
