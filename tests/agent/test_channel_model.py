"""Delivery under random failures, across restarts: every record arrives once, in order, except
the batches the sink rejected.

A real server cannot fail, reject and crash on cue a few hundred times in a second, so a
scripted sink stands in (the same paths run against influxd and VictoriaMetrics in
``test_agent_influx.py``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from eams.agent import channel
from eams.agent.channel import SinkChannel
from eams.agent.errors import SinkError
from eams.agent.metrics import AgentMetrics
from eams.agent.spool import Spool
from tests.agent.conftest import wait_for


class ScriptedSink:
    """Fails (retryable), rejects, raises a bug, or takes a batch, at random."""

    name = "scripted"

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.up = False  # True: always takes the batch
        self.taken: list[str] = []
        self.rejected: list[str] = []

    def encode(self, sample: object) -> str:
        return str(sample)

    def write(self, batch: Sequence[str]) -> None:
        roll = 1.0 if self.up else self.rng.random()
        if roll < 0.3:
            raise SinkError("down", retryable=True)
        if roll < 0.35:
            self.rejected.extend(batch)
            raise SinkError("bad points", retryable=False)
        if roll < 0.38:
            raise RuntimeError("a sink bug")
        self.taken.extend(batch)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("seed", range(8))
def test_random_failures_and_restarts(tmp_path: Path, seed: int, monkeypatch) -> None:
    monkeypatch.setattr(channel, "FIRST_BACKOFF_S", 0.001)
    rng = random.Random(seed)
    sink = ScriptedSink(rng)
    sent: list[str] = []
    metrics = AgentMetrics()

    def open_channel(batch_size: int) -> SinkChannel:
        spool = Spool(
            tmp_path / "s.sqlite", max_points=1_000_000, max_bytes=None, policy="drop_oldest"
        )
        return SinkChannel(sink, spool, metrics, batch_size=batch_size, max_backoff_s=0.003)

    def held() -> float | None:
        """Records the channel says it holds in memory (``eams_agent_queue_points``)."""
        return metrics.registry.get_sample_value("eams_agent_queue_points", {"sink": sink.name})

    for _ in range(3):  # three agent runs on one spool
        delivery = open_channel(rng.randint(1, 7))
        delivery.start()
        for _ in range(rng.randint(10, 40)):
            records = [f"p{len(sent) + i}" for i in range(rng.randint(1, 4))]
            sent += records
            delivery.submit(records)
        delivery.stop(10)
        assert held() == 0  # every record was written, rejected or spooled: none left in memory
    sink.up = True
    delivery = open_channel(5)
    delivery.start()
    delivery.submit([])  # a tick with nothing new: the spool is replayed
    wait_for(lambda: delivery.spool.depth_points == 0, "the spool replayed")
    delivery.stop(10)
    rejected = set(sink.rejected)
    assert sink.taken == [record for record in sent if record not in rejected]
