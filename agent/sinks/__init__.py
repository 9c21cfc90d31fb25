"""Where samples go: one module per destination behind the :class:`~.base.Sink` protocol.

:data:`SINKS` maps a configuration ``type`` to its factory ``(name, config) -> Sink``. A
factory imports its module when called, so a node pays only for the sinks it uses
(influxdb-client alone adds about 35 MB resident, see ``benchmarks/agent_bench.py``).
"""

from collections.abc import Callable
from typing import Any

from eams.agent.sinks.base import Sink


def _influx_v2(name: str, config: Any) -> Sink:
    from eams.agent.sinks.influx_v2 import InfluxV2Sink

    return InfluxV2Sink(name, config)


def _influx_v1(name: str, config: Any) -> Sink:
    from eams.agent.sinks.influx_v1 import InfluxV1Sink

    return InfluxV1Sink(name, config)


def _extender(name: str, config: Any) -> Sink:
    from eams.agent.sinks.extender import ExtenderSink

    return ExtenderSink(name, config)


def _jsonl(name: str, config: Any) -> Sink:
    from eams.agent.sinks.jsonl import JsonlSink

    return JsonlSink(name, config)


SINKS: dict[str, Callable[[str, Any], Sink]] = {
    "influx_v2": _influx_v2,
    "influx_v1": _influx_v1,
    "extender": _extender,
    "jsonl": _jsonl,
}

__all__ = ["SINKS", "Sink"]
