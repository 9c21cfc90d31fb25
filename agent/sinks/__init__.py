"""Where samples go: one module per destination behind the :class:`~.base.Sink` protocol.

:data:`SINKS` maps a configuration ``type`` to its factory ``(name, config) -> Sink``.
"""

from collections.abc import Callable
from typing import Any

from eams.agent.sinks.base import Sink
from eams.agent.sinks.extender import ExtenderSink
from eams.agent.sinks.influx_v1 import InfluxV1Sink
from eams.agent.sinks.influx_v2 import InfluxV2Sink
from eams.agent.sinks.jsonl import JsonlSink

SINKS: dict[str, Callable[[str, Any], Sink]] = {
    "influx_v2": InfluxV2Sink,
    "influx_v1": InfluxV1Sink,
    "extender": ExtenderSink,
    "jsonl": JsonlSink,
}

__all__ = ["SINKS", "Sink"]
