"""The check on runs with a power manager: a node switched off at its outlet, and a run that
used more energy while the model agrees (the report must not show that as a green success)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eams.calibrate.wallpower import check_runs, load_fleet, load_run, parse_run_spec
from eams.calibrate.wallpower.report import render_html, summary_json
from tests.wallpower.conftest import PACKED
from tests.wallpower.synth import RunPlan, packed, simulate

OFF_FROM_S, OFF_TO_S = 20.0, 45.0


def _switch_off(path: Path, start_ns: int) -> None:
    """Rewrite a node's samples inside the off stretch as its PDU owner and its agent would
    publish them: the outlet reads an exact 0 W, the node's own agent (not running) gives no
    utilisation."""
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        t_s = (record["measured_at_ns"] - start_ns) / 1e9
        if OFF_FROM_S <= t_s <= OFF_TO_S:
            record["power_w"], record["utilisation"], record["headroom"] = 0.0, None, 1.0
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def asleep_run(tmp_path: Path) -> Path:
    plan = RunPlan(packed(PACKED | {"n3": 0.0}), duration_s=60, counter=False, seed=3)
    simulate(plan, tmp_path / "b")
    _switch_off(tmp_path / "b" / "n3.jsonl", plan.start_ns)
    return tmp_path / "b"


def test_a_node_switched_off_is_modelled_at_0_w_too(two_runs, asleep_run, fleet_dir) -> None:
    a = load_run(parse_run_spec(f"jsonl:{two_runs[0]}"), "A")
    b = load_run(parse_run_spec(f"jsonl:{asleep_run}"), "B")
    result = check_runs(a, b, load_fleet(fleet_dir))
    n3 = result.b.nodes["n3"]
    idle_w = 12.0  # n3's hidden curve at 0 %, drawn while on
    on_s = 60 - (OFF_TO_S - OFF_FROM_S)
    assert n3.metered_wh == pytest.approx(idle_w * on_s / 3600, rel=0.08)
    # the calibrated line applies to a running node only: off, the model says 0 W as well
    assert abs(n3.model_error_pct) < 8
    assert n3.dE_dpidle_h == pytest.approx(on_s / 3600, rel=0.08)
    assert abs(result.difference_pts) < 3


def test_a_pass_on_a_loss_is_not_green(two_runs, fleet_dir) -> None:
    packed_run = load_run(parse_run_spec(f"jsonl:{two_runs[1]}"), "packed")
    spread_run = load_run(parse_run_spec(f"jsonl:{two_runs[0]}"), "spread")
    result = check_runs(packed_run, spread_run, load_fleet(fleet_dir))  # B uses more
    assert result.passed and result.saving_metered < 0
    html = render_html(result, links=[("pod-1 on n4", "../record/decisions.jsonl")])
    assert 'class="verdict PASS LOSS"' in html
    assert "used more energy" in html
    assert '<a href="../record/decisions.jsonl">pod-1 on n4</a>' in html
    won = render_html(check_runs(spread_run, packed_run, load_fleet(fleet_dir)))
    assert 'class="verdict PASS"' in won and "used more energy" not in won
    summary = summary_json(result, {"power_transitions": {"spread": {"sleep": 0, "wake": 0}}})
    assert summary["power_transitions"] == {"spread": {"sleep": 0, "wake": 0}}
    assert summary["saving_metered"] == result.saving_metered
