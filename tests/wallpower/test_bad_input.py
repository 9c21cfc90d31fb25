"""Bad input gives one clear message naming what was wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eams.calibrate.errors import CalibrationFileError
from eams.calibrate.wallpower import (
    InfluxUnreachable,
    RunDataError,
    RunMismatchError,
    RunSpecError,
    check_runs,
    load_fleet,
    load_run,
    parse_run_spec,
)
from eams.cli import cli
from tests.conftest import free_port
from tests.wallpower.synth import RunPlan, simulate, spread


def test_window_without_data_names_the_span_held(two_runs) -> None:
    spec = parse_run_spec(
        f"jsonl:{two_runs[0]}?start=2030-01-01T00:00:00Z&end=2030-01-01T01:00:00Z"
    )
    with pytest.raises(
        RunDataError, match=r"no telemetry in 2030-01-01T00:00:00Z .*holds 2026-11-29T10:00:00Z"
    ):
        load_run(spec, "A")


def test_node_missing_in_one_run(tmp_path: Path, two_runs, fleet_dir: Path) -> None:
    plan = RunPlan({k: v for k, v in spread(0.5).items() if k != "n5"}, duration_s=60)
    simulate(plan, tmp_path)
    a = load_run(parse_run_spec(f"jsonl:{two_runs[0]}"), "A")
    b = load_run(parse_run_spec(f"jsonl:{tmp_path}"), "B")
    with pytest.raises(RunMismatchError, match=r"node\(s\) n5 only in run A"):
        check_runs(a, b, load_fleet(fleet_dir))


def test_node_without_calibration(two_runs, fleet_dir: Path, tmp_path: Path) -> None:
    partial = tmp_path / "cal"
    partial.mkdir()
    for path in fleet_dir.glob("*.json"):
        if path.stem != "n6":
            (partial / path.name).write_text(path.read_text())
    a = load_run(parse_run_spec(f"jsonl:{two_runs[0]}"), "A")
    with pytest.raises(RunMismatchError, match=r"no calibration for node.* n6"):
        check_runs(a, a, load_fleet(partial))


def test_runs_of_different_length(tmp_path: Path, fleet_dir: Path) -> None:
    simulate(RunPlan(spread(0.5), duration_s=60), tmp_path / "a")
    simulate(RunPlan(spread(0.5), duration_s=90), tmp_path / "b")
    fleet = load_fleet(fleet_dir)
    a = load_run(parse_run_spec(f"jsonl:{tmp_path / 'a'}"), "A")
    b = load_run(parse_run_spec(f"jsonl:{tmp_path / 'b'}"), "B")
    by_time = check_runs(a, b, fleet)
    assert by_time.normalised_by == "time"
    assert abs(by_time.saving_metered) < 0.01  # same power: no saving although B is longer
    assert any("differ in length" in w for w in by_time.warnings)
    a = load_run(parse_run_spec(f"jsonl:{tmp_path / 'a'}?work_core_s=300"), "A")
    b = load_run(parse_run_spec(f"jsonl:{tmp_path / 'b'}?work_core_s=600"), "B")
    by_work = check_runs(a, b, fleet)
    assert by_work.normalised_by == "work" and by_work.unit == "J/core-s"
    assert by_work.saving_metered == pytest.approx(1 - 1.5 / 2, abs=0.01)
    b_only = load_run(parse_run_spec(f"jsonl:{tmp_path / 'b'}"), "B")
    with pytest.raises(RunMismatchError, match="only run A states work_core_s"):
        check_runs(a, b_only, fleet)


def test_unreachable_influx_is_one_line_on_the_cli(fleet_dir: Path, tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    spec = f"influx://127.0.0.1:{port}/eams?start=2026-11-29T10:00:00Z&end=2026-11-29T10:01:00Z"
    with pytest.raises(InfluxUnreachable, match=f"127.0.0.1:{port}: cannot reach InfluxDB"):
        load_run(parse_run_spec(spec), "A")
    result = CliRunner().invoke(
        cli,
        [
            "wallpower",
            "check",
            "--run-a",
            spec,
            "--run-b",
            spec,
            "--calibration",
            str(fleet_dir),
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 1
    assert isinstance(result.exception, InfluxUnreachable)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("csv:/tmp/x", "unknown form"),
        ("jsonl:/nonexistent/dir/x.jsonl", "no JSONL file at"),
        ("influx://127.0.0.1:8086/eams?start=0", "needs start=T and end=T"),
        ("influx://127.0.0.1:8086/?start=0&end=1", "needs a host and a database"),
        ("influx://127.0.0.1:8086/db?start=5&end=1", "end is not after start"),
        ("influx://127.0.0.1:8086/db?start=yesterday&end=1", "neither ISO-8601"),
        ("influx://127.0.0.1:8086/db?start=0&end=1&colour=red", "unknown option 'colour'"),
        ("influx://127.0.0.1:8086/db?start=0&end=1&work_core_s=-3", "work_core_s must be"),
        ("influx://[::1/eams?start=0&end=1", "not a URL"),
    ],
)
def test_bad_specs(text: str, message: str) -> None:
    with pytest.raises(RunSpecError, match=message):
        parse_run_spec(text)


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "n1.jsonl"
    path.write_text('{"node": "n1", "measured_at_ns": 1, "power_cap_w": 50}\n{"node": "n1"}\n')
    with pytest.raises(
        RunDataError, match=rf"{path}:2: telemetry sample: missing key 'measured_at_ns'"
    ):
        load_run(parse_run_spec(f"jsonl:{path}"), "A")


def test_node_without_metered_power_is_named(tmp_path: Path, fleet_dir: Path) -> None:
    simulate(RunPlan(spread(0.5), duration_s=30, counter=False), tmp_path)
    path = tmp_path / "n3.jsonl"
    path.write_text(path.read_text().replace('"metered"', '"modelled"'))  # the meter was down
    run = load_run(parse_run_spec(f"jsonl:{tmp_path}"), "A")
    with pytest.raises(RunDataError, match="run A, node n3: fewer than two metered power samples"):
        check_runs(run, run, load_fleet(fleet_dir))


def test_window_mostly_outside_the_data_is_refused(two_runs, fleet_dir: Path) -> None:
    # "+01:00" written for a UTC run: the window starts an hour before the first sample
    spec = parse_run_spec(f"jsonl:{two_runs[0]}?start=2026-11-29T10:00:00%2B01:00")
    run = load_run(spec, "A")
    assert run.duration_s == pytest.approx(3660)
    with pytest.raises(
        RunDataError,
        match=r"run A, node n1: no energy counter readings in 0\.0–3600\.0 s, at the start",
    ):
        check_runs(run, run, load_fleet(fleet_dir))


def test_agent_that_stopped_halfway_is_named(tmp_path: Path, fleet_dir: Path) -> None:
    plan = RunPlan(spread(0.5), duration_s=60, counter=False, gaps={"n2": [(30, 61)]})
    simulate(plan, tmp_path)
    run = load_run(parse_run_spec(f"jsonl:{tmp_path}"), "A")
    with pytest.raises(
        RunDataError, match=r"run A, node n2: no metered power in 30\.0–60\.0 s, at the end"
    ):
        check_runs(run, run, load_fleet(fleet_dir))


def test_short_edge_gap_is_held_and_reported(tmp_path: Path, fleet_dir: Path) -> None:
    plan = RunPlan(spread(0.5), duration_s=60, counter=False, gaps={"n2": [(54, 61)]})
    truth = simulate(plan, tmp_path)
    run = load_run(parse_run_spec(f"jsonl:{tmp_path}"), "A")
    node = check_runs(run, run, load_fleet(fleet_dir)).a.nodes["n2"]
    assert [(g.start_s, g.end_s) for g in node.gaps] == [(54.0, 60.0)]
    assert node.metered_wh == pytest.approx(truth["n2"], rel=0.02)  # held, not zero-filled


def test_gap_in_utilisation_only_is_reported(tmp_path: Path, fleet_dir: Path) -> None:
    simulate(RunPlan(spread(0.5), duration_s=60), tmp_path)
    path = tmp_path / "n3.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for record in lines[20:31]:  # n3's own agent was down; the PDU kept metering it
        record["utilisation"] = None
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    a = load_run(parse_run_spec(f"jsonl:{tmp_path}"), "A")
    b = load_run(parse_run_spec(f"jsonl:{tmp_path}"), "B")
    result = check_runs(a, b, load_fleet(fleet_dir))
    assert [(g.start_s, g.end_s) for g in result.a.nodes["n3"].utilisation_gaps] == [(19.0, 31.0)]
    assert any(
        w.startswith("run A, node n3; run B, node n3: 1 gap(s) in utilisation")
        and "19.0–31.0 s" in w
        for w in result.warnings
    ), result.warnings


@pytest.mark.parametrize("option", ["--accuracy-pct", "--tolerance-pts"])
@pytest.mark.parametrize("value", ["nan", "inf", "0", "101"])
def test_accuracy_and_tolerance_must_be_finite_and_in_range(
    option: str, value: str, two_runs, fleet_dir: Path, tmp_path: Path
) -> None:
    args = ["wallpower", "check", "--run-a", f"jsonl:{two_runs[0]}", "--run-b"]
    args += [f"jsonl:{two_runs[1]}", "--calibration", str(fleet_dir), "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, [*args, option, value])
    assert result.exit_code == 2, result.output  # a usage error, before any work
    assert f"Invalid value for '{option}'" in result.output
    assert not (tmp_path / "wallpower_report.html").exists()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("utilisation", 1.5, "utilisation 1.5 is outside \\[0, 1\\]"),
        ("power_w", -3.0, "power_w -3 W is negative"),
    ],
)
def test_out_of_range_value_names_file_and_line(
    tmp_path: Path, key: str, value: float, message: str
) -> None:
    simulate(RunPlan(spread(0.5), duration_s=10), tmp_path)
    path = tmp_path / "n2.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[4][key] = value
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(RunDataError, match=rf"^{path}:5: {message}$"):
        load_run(parse_run_spec(f"jsonl:{tmp_path}"), "A")


def test_impossible_calibration_names_its_file(tmp_path: Path, fleet_dir: Path) -> None:
    directory = tmp_path / "cal"
    directory.mkdir()
    for path in fleet_dir.glob("*.json"):
        (directory / path.name).write_text(path.read_text())
    data = json.loads((directory / "n2.json").read_text())
    data["fit"]["p_max_w"] = 1.0  # below its P_idle
    (directory / "n2.json").write_text(json.dumps(data))
    with pytest.raises(CalibrationFileError, match=rf"^{directory / 'n2.json'}: p_max_w=1.0 W"):
        load_fleet(directory)


def test_malformed_calibration_file_names_it(tmp_path: Path) -> None:
    (tmp_path / "n1.json").write_text('{"node": "n1", "schema')
    with pytest.raises(CalibrationFileError, match=rf"^{tmp_path / 'n1.json'}: not a JSON"):
        load_fleet(tmp_path)
