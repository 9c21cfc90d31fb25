"""VT-5 on simulated runs whose hidden truth is known: a right fleet passes, a wrong one fails."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eams.calibrate.wallpower import (
    check_runs,
    load_fleet,
    load_run,
    parse_run_spec,
    write_report,
)
from eams.calibrate.wallpower.cli import EXIT_FAIL, summary_lines
from eams.cli import cli
from tests.wallpower.synth import CURVES, RunPlan, simulate, spread, write_calibrations


def _runs(two_runs: tuple) -> tuple:
    dir_a, dir_b, _, _ = two_runs
    return (
        load_run(parse_run_spec(f"jsonl:{dir_a}"), "A"),
        load_run(parse_run_spec(f"jsonl:{dir_b}"), "B"),
    )


def test_correct_fleet_passes_and_metered_saving_matches_truth(two_runs, fleet_dir) -> None:
    a, b = _runs(two_runs)
    result = check_runs(a, b, load_fleet(fleet_dir))
    truth_a, truth_b = two_runs[2], two_runs[3]
    true_saving = 1 - sum(truth_b.values()) / sum(truth_a.values())
    assert result.passed
    assert abs(result.difference_pts) < 1.5
    assert result.saving_metered == pytest.approx(true_saving, abs=0.002)
    for name, node in result.a.nodes.items():
        assert node.method == "counter"
        assert node.metered_wh == pytest.approx(truth_a[name], rel=0.01)
    assert result.resolvable


def test_miscalibrated_node_fails_and_is_named(two_runs, tmp_path: Path) -> None:
    wrong = load_fleet(write_calibrations(tmp_path / "cal", scale_pmax={"n4": 2.0}))
    a, b = _runs(two_runs)
    result = check_runs(a, b, wrong)
    assert not result.passed
    assert abs(result.difference_pts) > 3
    worst = max(result.disagreement_pts, key=lambda n: abs(result.disagreement_pts[n]))
    assert worst == "n4"
    assert any("model error" in w and "n4 +" in w for w in result.warnings)


def test_cli_writes_report_and_exits_by_verdict(two_runs, fleet_dir, tmp_path: Path) -> None:
    dir_a, dir_b, _, _ = two_runs
    args = [
        "wallpower",
        "check",
        "--run-a",
        f"jsonl:{dir_a}?label=default",
        "--run-b",
        f"jsonl:{dir_b}?label=eams",
        "--calibration",
        str(fleet_dir),
    ]
    ok = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "ok")])
    assert ok.exit_code == 0, ok.output
    assert "VT-5 PASS" in ok.output
    summary = json.loads((tmp_path / "ok" / "wallpower_summary.json").read_text())
    assert summary["verdict"] == "PASS"
    assert set(summary["runs"]["a"]["nodes"]) == {f"n{i}" for i in range(1, 7)}
    html = (tmp_path / "ok" / "wallpower_report.html").read_text()
    assert html.count('src="data:image/png;base64,') == 3
    assert "http://" not in html and "https://" not in html  # self-contained

    wrong = write_calibrations(tmp_path / "wrong", scale_pmax={"n4": 2.0})
    fail = CliRunner().invoke(cli, [*args[:-1], str(wrong), "--out", str(tmp_path / "bad")])
    assert fail.exit_code == EXIT_FAIL
    assert "VT-5 FAIL" in fail.output
    assert (tmp_path / "bad" / "wallpower_report.html").is_file()


def test_report_shows_each_nodes_share_once_and_the_callers_note(
    two_runs, fleet_dir, tmp_path: Path
) -> None:
    a, b = _runs(two_runs)
    result = check_runs(a, b, load_fleet(fleet_dir))
    html_path, _ = write_report(result, tmp_path, note="played 32× faster <than> the trace")
    html = html_path.read_text()
    assert html.count("share of D (points)") == 1  # one value per node over both runs
    for name, points in result.disagreement_pts.items():
        assert f"<td class=l>{name}</td><td>{points:+.2f}</td>" in html
    assert "<p>played 32× faster &lt;than&gt; the trace</p>" in html


SWINGING = {n: (lambda t: np.where(np.sin(t * 1.3) > 0, 0.95, 0.05)) for n in CURVES}


@pytest.mark.parametrize(
    ("run_b", "tolerance_pts", "why"),
    [
        # every outlet's readings lost twice for 5 s of a 30 s run while the load swings
        (
            RunPlan(
                SWINGING,
                duration_s=30,
                seed=2,
                counter=False,
                gaps={n: [(4.0, 9.0), (14.0, 19.0)] for n in CURVES},
            ),
            3.0,
            "gaps in the metered data (up to 10.0 s of a node's 30.0 s run) widen it",
        ),
        # no gap: a 6 s run's sampling noise, which it is too short to average away
        (
            RunPlan(spread(0.3), duration_s=6, seed=2, counter=False, noise_w=6.0),
            3.0,
            "the run is too short to tell",
        ),
        # a counter counts through a gap: a band too narrow for its quantisation is what
        # cannot be resolved, and the gap is not blamed
        (
            RunPlan(SWINGING, duration_s=60, seed=2, gaps={n: [(40.0, 46.0)] for n in CURVES}),
            0.1,
            "the run is too short to tell",
        ),
        # the counter counts through a 25 s gap, but the utilisation the model needs is lost:
        # the models' uncertainty over it is the largest term
        (
            RunPlan(SWINGING, duration_s=60, seed=2, gaps={n: [(20.0, 45.0)] for n in CURVES}),
            0.1,
            "the fitted power models' uncertainty is the largest part of it",
        ),
    ],
)
def test_an_unresolved_verdict_names_its_cause(
    run_b: RunPlan, tolerance_pts: float, why: str, fleet_dir, tmp_path: Path
) -> None:
    """A NOT RESOLVED verdict says why the measurement cannot tell, by the largest term of its
    uncertainty: the metered data's gaps when readings were lost (an overloaded host's demo
    lost ~1.7 s twice a run and was told its run was "too short"), the run's length when
    none was, and any other term by its name."""
    run_a = RunPlan(
        spread(0.5), duration_s=run_b.duration_s, counter=run_b.counter, noise_w=run_b.noise_w
    )
    runs = []
    for label, plan in (("a", run_a), ("b", run_b)):
        simulate(plan, tmp_path / label)
        runs.append(load_run(parse_run_spec(f"jsonl:{tmp_path / label}"), label))
    result = check_runs(*runs, load_fleet(fleet_dir), tolerance_pts=tolerance_pts)
    assert not result.resolvable
    verdict = summary_lines(result)[0]
    assert verdict.startswith("VT-5 NOT RESOLVED") and f"uncertainty is wider: {why}" in verdict
