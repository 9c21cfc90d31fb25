"""The decision record's CPU panel, evaluated by a real VictoriaMetrics (PromQL/MetricsQL).

The series are what ``RecordMetrics`` really exports, incremented through its own counters and
written out as the scrapes, a minute apart, of an extender and of a power manager (the
Prometheus text format with timestamps, as a scraper stores it). The panel must give the
extender's CPU per placement by part and in all, and leave the power manager's record — which
writes power decisions, no placements — out instead of dividing its CPU by the extender's
placements.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from eams.scheduler.record.metrics import CPU_PARTS, RecordMetrics
from tests.servers.victoriametrics import VictoriaMetrics, victoriametrics  # noqa: F401

PANEL = "Decision record: its own CPU (ms per placement)"
DASHBOARD = Path(__file__).resolve().parents[2] / "dashboards" / "eams-scheduler.json"
SCRAPE_S = 300
"""The span the panel's 5 m rates read, s."""
SCRAPES = 5
CPU_S = {"lines": 0.03, "join": 0.003, "writer": 0.004, "annotator": 0.012}
"""CPU seconds each part of the extender's record spends over ``SCRAPE_S``."""
PLACEMENTS = 300


def _scrape(metrics: RecordMetrics, instance: str, at_s: int) -> list[str]:
    """The registry's samples as Prometheus text lines, labelled ``instance``, at ``at_s``."""
    lines = []
    for family in metrics.registry.collect():
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            labels = {**sample.labels, "instance": instance}
            text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            lines.append(f"{sample.name}{{{text}}} {sample.value} {at_s * 1000}")
    return lines


def _query(server: VictoriaMetrics, expr: str, at_s: int) -> dict[str, float]:
    response = httpx.get(
        f"{server.url}/api/v1/query", params={"query": expr, "time": at_s}, timeout=10
    )
    response.raise_for_status()
    result = response.json()["data"]["result"]
    return {
        ",".join(f"{k}={v}" for k, v in sorted(r["metric"].items())): float(r["value"][1])
        for r in result
    }


def test_the_record_cpu_panel_is_the_extenders_cpu_per_placement(
    victoriametrics: VictoriaMetrics,  # noqa: F811
) -> None:
    extender, manager = RecordMetrics(), RecordMetrics()
    for part in CPU_PARTS:  # created at start, as the extender's parts do: 0 until they run
        extender.cpu.labels(part)
    extender.decisions.labels("placement", "active")
    manager.cpu.labels("writer")
    manager.decisions.labels("power", "active")
    start_s = int(time.time()) - 2 * SCRAPE_S
    lines: list[str] = []
    for i in range(SCRAPES + 1):  # a scrape a minute, the load steady in between
        at_s = start_s + i * SCRAPE_S // SCRAPES
        lines += _scrape(extender, "extender:8000", at_s) + _scrape(manager, "pm:9100", at_s)
        for part in CPU_PARTS:
            extender.cpu.labels(part).inc(CPU_S[part] / SCRAPES)
        extender.decisions.labels("placement", "active").inc(PLACEMENTS / SCRAPES)
        manager.cpu.labels("writer").inc(1.0 / SCRAPES)  # a busy power manager's writer
        manager.decisions.labels("power", "active").inc(1)
    end_s = start_s + SCRAPE_S
    httpx.post(
        f"{victoriametrics.url}/api/v1/import/prometheus", content="\n".join(lines), timeout=10
    ).raise_for_status()
    httpx.get(f"{victoriametrics.url}/internal/force_flush", timeout=10).raise_for_status()

    panel = next(p for p in json.loads(DASHBOARD.read_text())["panels"] if p["title"] == PANEL)
    by_part, in_all = (_query(victoriametrics, t["expr"], end_s) for t in panel["targets"])
    assert by_part == pytest.approx(
        {f"instance=extender:8000,part={p}": 1e3 * CPU_S[p] / PLACEMENTS for p in CPU_PARTS}
    )
    assert in_all == pytest.approx({"instance=extender:8000": 1e3 * 0.049 / PLACEMENTS})
