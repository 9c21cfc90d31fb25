"""The push sink against the real extender (``eams extender serve`` in a subprocess), started
only after the agent: the first samples are spooled, then every sample is accepted once."""

from __future__ import annotations

from pathlib import Path

from tests.agent.conftest import (
    jsonl_samples,
    metric,
    running_agent,
    scrape,
    wait_for,
    write_config,
)
from tests.servers.uvicorn import ExtenderServer


def accepted(server: ExtenderServer) -> float:
    """The extender's ``eams_extender_telemetry_samples_total``."""
    return scrape(server.url).get(("eams_extender_telemetry_samples_total", frozenset()), 0.0)


def test_push_to_the_extender_after_it_comes_up(tmp_path: Path) -> None:
    server = ExtenderServer(tmp_path / "extender.log", mode="shadow")
    sink = {"type": "extender", "url": server.url, "max_backoff_s": 0.3}
    config = write_config(tmp_path, sinks=[sink, {"type": "jsonl", "path": "samples.jsonl"}])
    try:
        with running_agent(config) as agent:
            port = agent.metrics_port
            wait_for(
                lambda: (metric(port, "eams_agent_spool_points", sink="extender") or 0) >= 3,
                "spool",
            )
            server.start()
            wait_for(
                lambda: metric(port, "eams_agent_spool_points", sink="extender") == 0, "replay"
            )
        measured = jsonl_samples(tmp_path / "samples.jsonl")
        assert accepted(server) == len(measured)
        nodes = scrape(server.url).get(("eams_extender_telemetry_nodes", frozenset()))
        assert nodes == 1
    finally:
        server.stop()
