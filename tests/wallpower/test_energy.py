"""Counters that wrap or reset, gaps, coarse counters: detected, reported, never zero-filled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eams.calibrate.wallpower import check_runs, load_fleet, load_run, parse_run_spec
from eams.calibrate.wallpower.counter import CounterIntegral, counter_energy
from eams.calibrate.wallpower.energy import integrate
from eams.calibrate.wallpower.nodes import node_energy
from tests.wallpower.synth import RunPlan, packed, simulate, spread


def _node(directory: Path, fleet_dir: Path, name: str):
    run = load_run(parse_run_spec(f"jsonl:{directory}"), "B")
    model = load_fleet(fleet_dir)[name]
    return node_energy(run.nodes[name], model, run.duration_s, 3.0, "B")


def test_counter_reset_is_stitched_and_reported(tmp_path: Path, fleet_dir: Path) -> None:
    plan = RunPlan(spread(0.6), duration_s=60, counter_drop_at_s={"n3": 30.0})
    truth = simulate(plan, tmp_path)
    node = _node(tmp_path, fleet_dir, "n3")
    assert node.method == "counter"
    assert len(node.counter_events) == 1
    event = node.counter_events[0]
    assert event.at_s == pytest.approx(30.0)
    assert event.before_wh > 1000 and event.after_wh < 1
    assert event.how == "power"
    # without stitching the drop would subtract ~1000 Wh; stitched it matches the truth
    assert node.metered_wh == pytest.approx(truth["n3"], rel=0.01)


def test_counter_wrap_reported_in_check_warnings(tmp_path: Path, fleet_dir: Path) -> None:
    simulate(RunPlan(spread(0.5), duration_s=60), tmp_path / "a")
    simulate(RunPlan(spread(0.5), duration_s=60, counter_drop_at_s={"n2": 20.0}), tmp_path / "b")
    result = check_runs(
        load_run(parse_run_spec(f"jsonl:{tmp_path / 'a'}"), "A"),
        load_run(parse_run_spec(f"jsonl:{tmp_path / 'b'}"), "B"),
        load_fleet(fleet_dir),
    )
    assert any("node n2: energy counter went back" in w for w in result.warnings)
    assert abs(result.saving_metered) < 0.01  # same load in both runs


def test_gap_is_reported_and_bridged_not_zero_filled(tmp_path: Path, fleet_dir: Path) -> None:
    plan = RunPlan(
        packed({n: 0.7 for n in ("n1", "n2", "n3", "n4", "n5", "n6")}),
        duration_s=60,
        counter=False,
        gaps={"n1": [(20.0, 35.0)]},
    )
    truth = simulate(plan, tmp_path)
    node = _node(tmp_path, fleet_dir, "n1")
    assert node.method == "power"
    assert len(node.gaps) == 1
    assert node.gaps[0].start_s == pytest.approx(20.0) and node.gaps[0].end_s == pytest.approx(35.0)
    gap_energy_wh = truth["n1"] * 15 / 60
    assert node.metered_wh == pytest.approx(truth["n1"], rel=0.01)
    assert node.metered_wh > truth["n1"] - gap_energy_wh / 2  # zero-filling would lose it
    no_gap = _node_sd_without_gap(tmp_path / "ref", fleet_dir, plan)
    assert node.metered_sampling_sd_wh > no_gap  # the gap is charged to the uncertainty


def _node_sd_without_gap(directory: Path, fleet_dir: Path, plan: RunPlan) -> float:
    plan.gaps = {}
    simulate(plan, directory)
    return _node(directory, fleet_dir, "n1").metered_sampling_sd_wh


def test_edge_gap_and_missing_values_are_not_zero() -> None:
    t = np.arange(0.0, 10.0)
    y = np.full(10, 20.0)
    y[3:6] = np.nan  # three missing readings
    result = integrate(t, y, span_s=14.0)
    assert result is not None
    assert result.value == pytest.approx(20.0 * 14.0)  # held/bridged, not zero
    assert [(g.start_s, g.end_s) for g in result.gaps] == [(2.0, 6.0), (9.0, 14.0)]


def test_coarse_counter_falls_back_to_power(tmp_path: Path, fleet_dir: Path) -> None:
    plan = RunPlan(spread(0.5), duration_s=60, counter_resolution_wh=0.1)  # APC: 0.1 kWh steps
    truth = simulate(plan, tmp_path)
    node = _node(tmp_path, fleet_dir, "n1")
    assert node.method == "power"
    assert node.counter_note is not None and "too coarse" in node.counter_note
    assert node.metered_wh == pytest.approx(truth["n1"], rel=0.02)


def test_averaged_values_weigh_their_own_interval_exactly() -> None:
    # utilisation averaged over the second ending at each sample: 0.2 for 4 s, then 0.8 for 6 s
    t = np.arange(1.0, 11.0)
    u = np.where(t <= 4, 0.2, 0.8)
    result = integrate(t, u, span_s=10.0, averaged=True)
    assert result is not None
    assert result.value == pytest.approx(0.2 * 4 + 0.8 * 6)
    assert result.sampling_sd == pytest.approx(0.0)  # no gap, no edge: nothing unresolved
    trapezoid = integrate(t, u, span_s=10.0)
    assert trapezoid is not None and trapezoid.sampling_sd > 0


def test_counter_reset_without_power_around_it_counts_from_zero() -> None:
    # 100 W for 100 s read every second; the counter restarts from 0 at t = 50.5 s and the
    # readings around the drop carry no metered power (the PDU rebooted)
    t = np.arange(0.0, 101.0)
    exact_wh = np.where(t < 50.5, 500 + t * 100 / 3600, (t - 50.5) * 100 / 3600)
    energy = np.floor(exact_wh / 0.001) * 0.001  # a 1 Wh/1000 counter, as read
    power = np.full_like(t, 100.0)
    power[50:52] = np.nan
    result = counter_energy(t, energy, power, 100.0, ceiling_w=200.0)
    assert isinstance(result, CounterIntegral)
    (event,) = result.events
    assert event.how == "restart" and event.at_s == 51.0
    assert event.bridged_wh == energy[51]  # the new counter value: counted from 0
    # the 0.5 s between the last reading and the restart is the only energy not seen
    assert result.energy_wh == pytest.approx(99.5 * 100 / 3600, abs=0.003)
