"""The agent's public names (what other components may import) and its sink registry."""

import eams.agent
from eams.agent.config import SINK_TYPES
from eams.agent.sinks import SINKS


def test_public_names() -> None:
    assert eams.agent.__all__ == ["MEASUREMENT", "PowerSource", "TelemetrySample"]


def test_every_configurable_sink_type_has_a_factory() -> None:
    assert set(SINKS) == set(SINK_TYPES)
