"""Every Grafana query reads names the code really writes or exports.

InfluxQL queries may name only the measurement, tags and fields of ``eams.telemetry``;
PromQL queries only the metric families (and their labels) that the agent's, the extender's and
the decision record's Prometheus registries export. A rename in the code breaks this test
instead of a dashboard.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from eams import telemetry as schema
from eams.agent.metrics import AgentMetrics
from eams.scheduler.extender.metrics import ExtenderMetrics
from eams.scheduler.record.metrics import RecordMetrics

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
# Labels Prometheus itself attaches at scrape time, and PromQL's histogram bucket label.
SCRAPE_LABELS = {"instance", "job", "le"}
PROMQL_WORDS = {"by", "without", "sum", "max", "min", "avg", "rate", "histogram_quantile"}

INFLUX_NAMES = {schema.MEASUREMENT, *schema.TAGS, *schema.FIELDS}


def exported_series() -> dict[str, set[str]]:
    """Series name → label names, for everything the agent's, the extender's and the decision
    record's registries export (counters as ``<name>_total``; histograms as ``_bucket``,
    ``_sum``, ``_count``).

    Label names come from the standard collectors' declared labels (``_labelnames``: a labelled
    collector exports no sample before its first ``labels()`` call) and from the samples of
    custom collectors.
    """
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
    series: dict[str, set[str]] = {}
    for owner in (AgentMetrics(), ExtenderMetrics(), RecordMetrics()):
        declared = {
            c._name: set(c._labelnames)
            for c in vars(owner).values()
            if isinstance(c, MetricWrapperBase)
        }
        for family in owner.registry.collect():
            labels = declared.get(family.name, set()).union(
                *(sample.labels for sample in family.samples)
            )
            for suffix in suffixes.get(family.type, [""]):
                series[family.name + suffix] = labels
    return series


def targets(dashboard: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(panel title, data-source type, query) for every panel target and template variable."""
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            kind = target["datasource"]["type"]
            yield panel["title"], kind, target["query" if kind == "influxdb" else "expr"]
    for variable in dashboard["templating"]["list"]:
        yield f"variable {variable['name']}", variable["datasource"]["type"], variable["query"]


def influx_problems(query: str) -> list[str]:
    """Double-quoted identifiers that are not in the telemetry schema."""
    return [
        f"unknown measurement/tag/field {name!r}"
        for name in re.findall(r'"([^"]+)"', query)
        if name not in INFLUX_NAMES
    ]


def promql_problems(query: str, series: dict[str, set[str]]) -> list[str]:
    """Metric names not exported, and grouping/matcher labels that no used metric has."""
    used = set(re.findall(r"\b(eams_[a-z0-9_]+)\b", query))
    problems = [f"unknown metric {name!r}" for name in sorted(used - series.keys())]
    known_labels = set().union(*(series.get(name, set()) for name in used)) | SCRAPE_LABELS
    grouped = re.findall(r"\bby\s*\(([^)]*)\)", query)
    matchers = re.findall(
        r"([a-z_]+)\s*(?:=~|!=|!~|=)", " ".join(re.findall(r"\{([^}]*)\}", query))
    )
    labels = {label.strip() for group in grouped for label in group.split(",")} | set(matchers)
    problems += [f"unknown label {label!r}" for label in sorted(labels - known_labels - {""})]
    return problems


def dashboard_files() -> list[Path]:
    files = sorted(DASHBOARDS.glob("*.json"))
    assert files, f"no dashboards in {DASHBOARDS}"
    return files


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda p: p.name)
def test_every_query_names_what_the_code_writes(path: Path) -> None:
    dashboard = json.loads(path.read_text())
    series = exported_series()
    problems = []
    for title, kind, query in targets(dashboard):
        found = influx_problems(query) if kind == "influxdb" else promql_problems(query, series)
        problems += [f"{path.name}: {title}: {problem}" for problem in found]
    assert problems == []


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda p: p.name)
def test_panels_use_the_provisioned_data_sources(path: Path) -> None:
    provisioned = yaml.safe_load((DASHBOARDS / "provisioning/datasources/eams.yaml").read_text())
    uids = {(d["type"], d["uid"]) for d in provisioned["datasources"]}
    dashboard = json.loads(path.read_text())
    used = {
        (target["datasource"]["type"], target["datasource"]["uid"])
        for panel in dashboard["panels"]
        for target in panel["targets"]
    }
    assert used <= uids


def test_a_renamed_name_is_caught() -> None:
    """The checks above can fail: a field, a metric and a label that the code does not have."""
    series = exported_series()
    assert influx_problems('SELECT mean("power_watts") FROM "eams_node"') == [
        "unknown measurement/tag/field 'power_watts'"
    ]
    assert promql_problems("eams_agent_spool_depth", series) == [
        "unknown metric 'eams_agent_spool_depth'"
    ]
    assert promql_problems("sum by (host) (eams_agent_spool_points)", series) == [
        "unknown label 'host'"
    ]
    assert promql_problems("sum by (sink) (eams_agent_spool_points)", series) == []
    assert promql_problems('eams_record_bindings_total{honored="yes"}', series) == [
        "unknown label 'honored'"
    ]


def test_the_dashboards_cover_what_operators_watch() -> None:
    """Fleet power and energy, headroom, telemetry age, calibration, auction clearing,
    extender latency and errors, agent spool depth (issue 9); the honoured fraction and the
    decisions per mode from the decision record (issue 19)."""
    queries = " ".join(
        query for path in dashboard_files() for _, _, query in targets(json.loads(path.read_text()))
    )
    for needle in (
        'mean("power_w")',
        'integral("power_w", 1h)',
        '"headroom"',
        "eams_agent_sample_age_seconds",
        "eams_extender_node_p_idle_watts",
        "eams_extender_node_price",
        "eams_extender_auction_rounds_bucket",
        "eams_extender_fallbacks_total",
        "histogram_quantile(0.99, sum by (le, path) (rate(eams_extender_request_duration_seconds",
        "eams_extender_errors_total",
        "eams_agent_spool_points",
        'sum by (mode) (rate(eams_record_bindings_total{honoured="yes"}',
        "sum by (kind, mode) (rate(eams_record_decisions_total",
        "eams_record_dropped_total",
    ):
        assert needle in queries
