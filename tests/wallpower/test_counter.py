"""The outlet's energy counter is trusted only where the outlet could have drawn its increments.

Issue 16, item 4: a transient 0 in one outlet's counter (116,300 → 0 → 116,300 Wh) was counted
as 116 kWh of energy and flipped the verdict; counters above ~10¹¹ Wh (an APC 32-bit counter in
tenths of kWh reaches 4.29·10¹¹ Wh) left the counter path with the false note "did not
advance" and their wraps went unreported.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eams.calibrate.wallpower import check_runs, load_fleet, load_run, parse_run_spec, write_report
from eams.calibrate.wallpower.counter import (
    CounterFallback,
    CounterIntegral,
    counter_ceiling_w,
    counter_energy,
)
from eams.cli import cli
from tests.wallpower.conftest import PACKED
from tests.wallpower.synth import RunPlan, packed, simulate, spread

APC_MODULUS_WH = 2**32 * 100.0
"""A 32-bit counter in tenths of kWh (rPDU2OutletMeteredStatusEnergy) wraps here (Wh)."""


def _check(root: Path, fleet_dir: Path, resolution_wh: float, glitch: dict[str, float]):
    common = {"duration_s": 60, "counter_offset_wh": 116_300.0}
    common["counter_resolution_wh"] = resolution_wh
    simulate(RunPlan(spread(0.5), **common), root / "a")
    truth_b = simulate(
        RunPlan(packed(PACKED), seed=2, counter_glitch_at_s=glitch, **common), root / "b"
    )
    result = check_runs(
        load_run(parse_run_spec(f"jsonl:{root / 'a'}"), "A"),
        load_run(parse_run_spec(f"jsonl:{root / 'b'}"), "B"),
        load_fleet(fleet_dir),
    )
    return result, truth_b


@pytest.mark.parametrize(
    ("resolution_wh", "method"), [(0.001, "counter"), (100.0, "power")], ids=["fine", "APC"]
)
def test_transient_zero_is_a_reported_glitch_not_energy(
    tmp_path: Path, fleet_dir: Path, resolution_wh: float, method: str
) -> None:
    clean, _ = _check(tmp_path / "clean", fleet_dir, resolution_wh, {})
    result, truth_b = _check(tmp_path / "glitch", fleet_dir, resolution_wh, {"n3": 30.0})
    n3 = result.b.nodes["n3"]
    assert n3.method == method
    assert n3.metered_wh == pytest.approx(truth_b["n3"], rel=0.01)  # not +116 kWh
    assert result.passed and clean.passed
    assert result.difference_pts == pytest.approx(clean.difference_pts, abs=0.05)
    (event,) = n3.counter_events
    assert (event.kind, event.at_s, event.after_wh, event.readings) == ("glitch", 30.0, 0.0, 1)
    assert event.before_wh == pytest.approx(116_300, abs=1)
    finding = [w for w in result.warnings if "n3: energy counter glitch at 30.0 s" in w]
    assert len(finding) == 1 and "ignored" in finding[0]
    _, json_path = write_report(result, tmp_path / "report")
    reported = json.loads(json_path.read_text())["runs"]["b"]["nodes"]["n3"]["counter_events"]
    assert [e["kind"] for e in reported] == ["glitch"]


def _series(hours: float, power_w: float, start_wh: float, resolution_wh: float = 100.0):
    t = np.arange(0.0, hours * 3600 + 1, 60.0)
    exact_wh = start_wh + t * power_w / 3600
    counter = np.floor(exact_wh / resolution_wh) * resolution_wh % APC_MODULUS_WH
    return t, counter, np.full_like(t, power_w)


def test_apc_counter_near_its_32_bit_limit_is_used_and_its_wrap_reported() -> None:
    # 2 kW for 10 h = 20 kWh = 200 steps of 100 Wh; the counter wraps at 4.29e11 Wh after 2.5 h
    t, counter, power = _series(10, 2000.0, APC_MODULUS_WH - 5000)
    result = counter_energy(t, counter, power, float(t[-1]), ceiling_w=4000.0)
    assert isinstance(result, CounterIntegral), result
    assert result.resolution_wh == pytest.approx(100.0)
    assert result.energy_wh == pytest.approx(20_000, abs=200)
    (event,) = result.events
    assert event.kind == "wrap" and event.how == "power"
    assert event.at_s == pytest.approx(2.5 * 3600, abs=60)
    assert event.before_wh > 4.29e11 and event.after_wh < 1000


def test_coarse_counter_near_its_limit_says_too_coarse_and_still_reports_its_wrap() -> None:
    # 500 W for 3 h: 15 steps of 100 Wh, one of them across the wrap (bridged by power): too
    # few; the note must not claim that the counter did not advance
    t, counter, power = _series(3, 500.0, APC_MODULUS_WH - 700)
    result = counter_energy(t, counter, power, float(t[-1]), ceiling_w=1000.0)
    assert isinstance(result, CounterFallback)
    assert result.reason is not None and "advanced only 14 steps of 100 Wh" in result.reason
    (event,) = result.events
    assert event.kind == "wrap"


def test_counter_that_stood_still_and_caught_up_is_trusted() -> None:
    # 100 W read every second; the counter (1 mWh) froze for 10 readings, then caught up
    t = np.arange(0.0, 121.0)
    counter = np.floor((5000 + t * 100 / 3600) / 0.001) * 0.001
    counter[40:50] = counter[39]
    result = counter_energy(t, counter, np.full_like(t, 100.0), 120.0, ceiling_w=200.0)
    assert isinstance(result, CounterIntegral)
    assert result.events == ()
    assert result.energy_wh == pytest.approx(120 * 100 / 3600, abs=0.003)


def test_one_reading_too_high_is_a_glitch_even_without_a_ceiling() -> None:
    t = np.arange(0.0, 121.0)
    counter = np.floor((5000 + t * 100 / 3600) / 0.001) * 0.001
    counter[60] += 50_000.0  # a spike, then back on course
    result = counter_energy(t, counter, np.full(t.size, np.nan), 120.0, ceiling_w=None)
    assert isinstance(result, CounterIntegral)
    (event,) = result.events
    assert (event.kind, event.at_s, event.readings) == ("glitch", 60.0, 1)
    assert result.energy_wh == pytest.approx(120 * 100 / 3600, abs=0.003)


def test_leap_beyond_the_outlets_rating_is_reported_and_not_counted() -> None:
    # no metered power (counter only): the rating is the only bound; the counter leaps 50 kWh
    # in one second and carries on from there
    t = np.arange(0.0, 121.0)
    counter = np.floor((5000 + t * 100 / 3600) / 0.001) * 0.001
    counter[80:] += 50_000.0
    power = np.full(t.size, np.nan)
    ceiling_w = counter_ceiling_w(power, rating_w=2300.0)
    assert ceiling_w == 2300.0
    result = counter_energy(t, counter, power, 120.0, ceiling_w=ceiling_w)
    assert isinstance(result, CounterIntegral)
    (event,) = result.events
    assert event.kind == "jump" and event.at_s == 80.0
    assert event.implied_w is not None and event.implied_w > 1e8
    assert result.energy_wh == pytest.approx(120 * 100 / 3600, abs=0.01)


def test_ceiling_comes_from_power_calibration_and_rating() -> None:
    power = np.array([np.nan, 40.0, 55.0, 50.0])
    assert counter_ceiling_w(power) == pytest.approx(110.0)  # twice the highest metered
    assert counter_ceiling_w(power, p_max_w=80.0) == pytest.approx(160.0)
    assert counter_ceiling_w(power, p_max_w=80.0, rating_w=100.0) == pytest.approx(100.0)
    assert counter_ceiling_w(np.full(3, np.nan)) is None


def test_cli_takes_the_outlet_rating_and_reports_the_glitch(
    tmp_path: Path, fleet_dir: Path
) -> None:
    _check(tmp_path, fleet_dir, 0.001, {"n3": 30.0})
    args = ["wallpower", "check", "--run-a", f"jsonl:{tmp_path / 'a'}"]
    args += ["--run-b", f"jsonl:{tmp_path / 'b'}", "--calibration", str(fleet_dir)]
    args += ["--out", str(tmp_path / "report")]
    ok = CliRunner().invoke(cli, [*args, "--outlet-rating-w", "60"])
    assert ok.exit_code == 0, ok.output
    assert "VT-5 PASS" in ok.output and "n3: energy counter glitch at 30.0 s" in ok.output
    summary = json.loads((tmp_path / "report" / "wallpower_summary.json").read_text())
    (event,) = summary["runs"]["b"]["nodes"]["n3"]["counter_events"]
    assert event["ceiling_w"] == 60.0  # the rating, below twice the node's most (90 W)
    for bad in ("nan", "0", "-5"):
        refused = CliRunner().invoke(cli, [*args, "--outlet-rating-w", bad])
        assert refused.exit_code == 2, (bad, refused.output)
