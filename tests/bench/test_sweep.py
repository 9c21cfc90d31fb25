"""Manifests, determinism (AR-8) and the ``eams bench sweep`` command end to end."""

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from eams.cli import cli
from eams.scheduler.bench.errors import ManifestError
from eams.scheduler.bench.manifest import load_manifest, parse_manifest
from eams.scheduler.bench.sweep import cells, run_rho_sweep, start_order

MANIFESTS = Path(__file__).resolve().parents[2] / "scheduler" / "bench" / "manifests"

SMALL = {
    "name": "unit",
    "trace": {"source": "synthetic", "synthetic": {"pods": 150}},
    "cluster": {"nodes": 8, "server_models": 3},
    "schedulers": ["default", "most-allocated", "milp", "eams"],
    "rho": [0.5, 1.2],
    "seeds": [1, 2],
    "workers": 1,
}


def test_unknown_scheduler_is_refused_naming_it() -> None:
    with pytest.raises(ManifestError, match=r"schedulers: .*unknown scheduler 'kube-magic'"):
        parse_manifest({**SMALL, "schedulers": ["default", "kube-magic"]})


def test_unknown_key_and_bad_rho_are_refused_with_their_path() -> None:
    with pytest.raises(ManifestError, match=r"cluster.node_count: Extra inputs"):
        parse_manifest({**SMALL, "cluster": {"node_count": 3}})
    with pytest.raises(ManifestError, match=r"rho: .*ρ must be > 0"):
        parse_manifest({**SMALL, "rho": [0.5, -1]})


def test_shipped_manifests_validate() -> None:
    for path in MANIFESTS.glob("*.yaml"):
        manifest = load_manifest(path)
        assert manifest.schedulers and manifest.rho and manifest.seeds, path


def test_a_sweep_starts_with_the_band_seed_by_seed_then_the_rest() -> None:
    manifest = parse_manifest({**SMALL, "rho": [0.2, 0.85, 1.6, 1.0], "seeds": [3, 1]})
    order = start_order(manifest, cells(manifest))
    keys = [(c.rho, c.seed, c.scheduler) for c in order]
    band = 2 * 2 * 4 * 2  # ρ in the band × seeds × schedulers × modes
    assert all(0.7 <= rho <= 1.0 for rho, _, _ in keys[:band])
    assert [seed for _, seed, _ in keys[:band]] == [3] * (band // 2) + [1] * (band // 2)
    assert keys[0] == (1.0, 3, "milp") and keys[band] == (1.6, 3, "milp")
    first_seed_outside = keys[band : band + 2 * 2 * 4]
    assert {seed for _, seed, _ in first_seed_outside} == {3}
    assert sorted(order, key=cells(manifest).index) == cells(manifest)


def test_same_manifest_gives_identical_numbers(shared_data) -> None:
    manifest = parse_manifest(SMALL)
    first, _ = run_rho_sweep(manifest)
    second, _ = run_rho_sweep(manifest)
    assert json.dumps(first, default=str) == json.dumps(second, default=str)
    assert len(first) == 4 * 2 * 2 * 2  # schedulers × {none, power manager} × ρ × seeds
    assert all(r["violations"] == 0 and r["placed"] == r["pods"] for r in first)
    seeds = {r["seed"]: r["energy_j"] for r in first if r["run"] == "default"}
    assert seeds[1] != seeds[2]
    for row in first:  # the manager sleeps nodes; without it nothing transitions
        managed = row["power_manager"] == "policy"
        assert (row["sleeps"] > 0) == managed and (row["wakes"] == 0 or managed), row["run"]
    assert sum(r["wakes"] for r in first) > 0


def test_sweep_command_writes_results_plots_and_summary(shared_data, tmp_path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump({**SMALL, "seeds": [1]}))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["bench", "sweep", "--manifest", str(manifest), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "most-allocated: AR-3" in result.output and "AR-7" in result.output
    assert (
        "most-allocated+pm: AR-3" in result.output and "transitions per node-hour" in result.output
    )
    assert "what the market adds: eams+pm vs most-allocated+pm" in result.output
    assert "what sleeping saves: default+pm vs default" in result.output
    data = json.loads((out / "results.json").read_text())
    names = ("default", "most-allocated", "milp", "eams")
    assert {r["run"] for r in data["results"]} == {*names, *(n + "+pm" for n in names)}
    market = {"market", "market-default"}  # eams+pm against most-allocated+pm and default+pm
    assert set(data["comparisons"]) == {*market, *(f"sleep:{n}" for n in names)}
    assert (out / "results.csv").read_text().startswith("run,scheduler,power_manager,rho,seed")
    for png in ("regime.png", "regime_energy.png", "regime_p95.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    assert len((out / "cells.jsonl").read_text().splitlines()) == 4 * 2 * 2
    latency = json.loads((out / "latency.json").read_text())
    assert all(row["decisions"] > 0 for row in latency)


def test_sweep_command_reports_bad_manifest_in_one_line(tmp_path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump({**SMALL, "schedulers": ["nope"]}))
    result = CliRunner().invoke(cli, ["bench", "sweep", "--manifest", str(manifest), "--out", "x"])
    assert result.exit_code != 0
    assert "unknown scheduler 'nope'" in str(result.exception)


def test_paired_differences_carry_a_95_percent_interval_over_seeds() -> None:
    from eams.scheduler.bench.summary import (
        ENERGY,
        WHOLE_RUN,
        comparisons,
        evaluate,
        paired,
        report_lines,
    )

    def row(run: str, seed: int, energy: float, p95: float, whole: float = 50.0) -> dict:
        scheduler = run.removesuffix("+pm")
        manager = "policy" if run.endswith("+pm") else "none"
        return {
            "scheduler": scheduler,
            "power_manager": manager,
            "run": run,
            "rho": 0.85,
            "seed": seed,
            ENERGY: energy,
            WHOLE_RUN: whole,
            "p95_completion_s": p95,
            "jain": 1.0,
            "violations": 0,
            "unschedulable": 0,
        }

    # eams-batch+pm saves 10, 20 and 30 % against most-allocated+pm on three seeds in the
    # window, and loses 2 % in every seed over the whole run
    results = [row("most-allocated+pm", s, 100.0, 1000.0) for s in (1, 2, 3)]
    results += [
        row("eams-batch+pm", s, e, 1000.0, whole=51.0) for s, e in ((1, 90.0), (2, 80.0), (3, 70.0))
    ]
    got = paired(results, "eams-batch+pm", "most-allocated+pm")[0.85]
    mean, half = got["energy_gain_pct"]
    # mean 20 %, sd 10 %, t(0.975, 2) = 4.303: half-width 4.303 · 10 / √3
    assert got["seeds"] == 3 and mean == pytest.approx(20.0)
    assert half == pytest.approx(4.302653 * 10.0 / 3**0.5, rel=1e-5)
    assert got["p95_change_pct"] == (0.0, 0.0)
    compared = comparisons(results)["market-batch"]
    assert compared["paired"][0.85]["energy_gain_pct"] == (mean, half)
    whole_mean, whole_half = compared["paired_whole_run"][0.85]["energy_gain_pct"]
    assert whole_mean == pytest.approx(-2.0) and whole_half == pytest.approx(0.0, abs=1e-9)
    line = next(
        x for x in report_lines(evaluate(results), comparisons(results)) if "market-batch" in x
    )
    assert "ρ=0.85: +20.0 ± 24.8 % energy (whole run -2.0 ± 0.0 %), +0.0 ± 0.0 % p95" in line
    assert "(3 seeds paired)" in line
    # no default cells (a sweep of two runs): AR-3 cannot be judged, and it says why, not
    # that ρ 0.85 lies outside the band
    (run_line,) = [x for x in report_lines(evaluate(results)) if x.startswith("eams-batch+pm:")]
    assert "AR-3 n/a (no cells of the reference run to compare with)" in run_line
    assert "shape undetermined (no cells of the reference run to compare with)" in run_line


def test_a_stopped_sweep_compares_runs_over_the_seeds_they_share() -> None:
    """Seed 2 draws a fleet that uses twice the energy; the reference has only seed 1 so far:
    the gain is seed 1's alone, not the mean of seeds 1–2 against seed 1."""
    from eams.scheduler.bench.summary import ENERGY, WHOLE_RUN, comparisons, evaluate

    def row(run: str, seed: int, energy: float) -> dict:
        return {
            "scheduler": run.removesuffix("+pm"),
            "power_manager": "policy" if run.endswith("+pm") else "none",
            "run": run,
            "rho": 0.85,
            "seed": seed,
            ENERGY: energy,
            WHOLE_RUN: energy,
            "p95_completion_s": 1000.0 * seed,
            "jain": 1.0,
            "violations": 0,
            "unschedulable": 0,
        }

    results = [row("default", 1, 100.0), row("eams", 1, 90.0), row("eams", 2, 180.0)]
    results += [row("most-allocated+pm", 1, 50.0), row("eams+pm", 1, 45.0), row("eams+pm", 2, 90.0)]
    assert evaluate(results)["eams"]["energy_gain_pct"][0.85] == pytest.approx(10.0)
    assert evaluate(results)["eams"]["p95_regression_pct"][0.85] == pytest.approx(0.0)
    market = comparisons(results)["market"]
    assert market["band_gain_pct"] == pytest.approx(10.0)
    assert market["whole_run_gain_pct"][0.85] == pytest.approx(10.0)
