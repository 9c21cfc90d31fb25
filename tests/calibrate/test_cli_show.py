"""``eams calibrate show`` (table and PNG), speed references and partial-data files, on
calibration files built from synthetic sweeps (no load needed)."""

from __future__ import annotations

import json
import struct
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from eams.calibrate.calfile import calibration_from_sweep, load_calibration, save_calibration
from eams.calibrate.errors import CalibrationFileError, FitError
from eams.calibrate.run import SpeedReferenceSpec, fit_and_save, partial_path
from eams.calibrate.sweeprecord import SweepRecord
from eams.cli import cli
from tests.calibrate.test_calfile import _powers, _record


def _saved(tmp_path: Path, node: str, p_max: float) -> Path:
    record = _record(_powers(p_max=p_max)).model_copy(update={"node": node})
    cal = calibration_from_sweep(record, created_at=datetime.now(UTC))
    return save_calibration(cal, tmp_path / f"{node}.json")


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])  # IHDR width, height


def test_show_prints_every_node_and_draws_the_plot(tmp_path: Path) -> None:
    files = [_saved(tmp_path, "mini-1", 31.0), _saved(tmp_path, "mini-2", 45.0)]
    png = tmp_path / "fleet.png"
    args = ["calibrate", "show", *map(str, files), "--plot", str(png)]
    result = CliRunner().invoke(cli, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "mini-1" in result.output and "mini-2" in result.output
    assert _png_size(png) == (1000, 400) and png.stat().st_size > 10_000


def test_six_nodes_are_a_grid_not_a_strip(tmp_path: Path) -> None:
    files = [_saved(tmp_path, f"mini-{i}", 31.0 + i) for i in range(1, 7)]
    png = tmp_path / "fleet.png"
    result = CliRunner().invoke(cli, ["calibrate", "show", *map(str, files), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert _png_size(png) == (1500, 800)  # 3 × 2 panels of 500 × 400


def test_plot_into_a_missing_folder_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    files = [str(_saved(tmp_path, "mini-1", 31.0))]
    png = tmp_path / "typo" / "fleet.png"
    result = CliRunner().invoke(cli, ["calibrate", "show", *files, "--plot", str(png)])
    assert result.exit_code == 2
    assert f"the folder {png.parent} does not exist" in result.output
    assert not png.parent.exists()


def test_table_fits_80_columns_without_cutting_a_value(tmp_path: Path) -> None:
    files = [_saved(tmp_path, f"mini-{i}", 31.0 + 40 * i) for i in range(1, 7)]
    result = CliRunner().invoke(cli, ["calibrate", "show", *map(str, files)], terminal_width=80)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in result.output
    assert "linear" in result.output and "created" in result.output
    cal = load_calibration(files[5])
    low, high = cal.p_max_ci95_w
    assert f"{cal.p_max_w:.1f}" in result.output and f"±{(high - low) / 2:.1f}" in result.output


RETAKEN = (
    "boot: 1 repeat(s) retaken: timed to ±1.07 s, over 4× the median ±0.10 s (the host or its "
    "probes stalled)"
)


def test_schema_2_tables_keep_headers_and_node_names_whole_at_80_columns(tmp_path: Path) -> None:
    from tests.calibrate.powerstates.test_record import _states

    files = []
    for node in ("duckburg-worker-01", "duckburg-worker-0002-gpu"):  # 18 and 24 characters
        path = _saved(tmp_path, node, 45.0)
        states = _states().model_copy(update={"notes": [RETAKEN]})
        files.append(save_calibration(load_calibration(path).with_power_states(states), path))
    result = CliRunner().invoke(cli, ["calibrate", "show", *map(str, files)], terminal_width=80)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in result.output
    for node in ("duckburg-worker-01", "duckburg-worker-0002-gpu"):  # on one line, both tables
        assert sum(line.startswith(f"{node} ") for line in lines) == 2, result.output
    assert "value [95 % CI]" in result.output and "energy J [95 % CI]" in result.output
    for label, value in (("P_suspend W", "3.3 [1.4, 5.3]"), ("wake s", "2.0 [1.7, 2.3]")):
        assert any(line.strip().startswith(label) and value in line for line in lines), label
    assert any("boot s" in line and "75 [68, 82]" in line for line in lines)
    # the measurement's notes, under the table, a node's each, wrapped, never cut
    for node in ("duckburg-worker-01", "duckburg-worker-0002-gpu"):
        assert f"note: {node}: {RETAKEN}" in " ".join(result.output.split())


def test_show_refuses_a_bad_file_naming_the_field(tmp_path: Path) -> None:
    path = _saved(tmp_path, "mini-1", 31.0)
    data = json.loads(path.read_text())
    del data["fit"]["r2"]
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["calibrate", "show", str(path)])
    assert isinstance(result.exception, CalibrationFileError)
    assert "field 'fit.r2'" in str(result.exception)


def test_speed_is_relative_to_the_reference_file(tmp_path: Path) -> None:
    reference = SpeedReferenceSpec.from_file(_saved(tmp_path, "mini-1", 31.0))
    assert reference.name == "mini-1" and reference.bogo_ops_per_s == 1800.0
    faster = _record(_powers()).model_copy(update={"node": "mini-2"})
    levels = [lv.model_copy(update={"bogo_ops_per_s": 2700.0}) for lv in faster.levels]
    cal = fit_and_save(
        faster.model_copy(update={"levels": levels}), tmp_path / "m2.json", reference
    )
    assert cal.speed == pytest.approx(1.5)
    assert cal.speed_reference.reference == "mini-1"


def test_a_refused_fit_keeps_the_raw_sweep(tmp_path: Path) -> None:
    record = _record({0: [0.0], 50: [0.0], 100: [70.0]}, floor_w=50.0)
    out = tmp_path / "calibration" / "mini-1.json"
    with pytest.raises(FitError, match=r"outlet 3: .*raw sweep kept in .*mini-1.partial.json"):
        fit_and_save(record, out)
    assert not out.exists()
    kept = SweepRecord.model_validate_json(partial_path(out).read_text())
    assert kept == record
