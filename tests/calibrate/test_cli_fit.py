"""``eams calibrate fit FILE [--json]``: the JSON keys, the CSVs people have (either spelling,
BOM, spaces, letter case), and bad CSVs refused by row and column."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eams.calibrate.errors import FitError
from eams.cli import cli

KEYS = {"p_idle_w", "p_max_w", "p_idle_ci95_w", "p_max_ci95_w", "r2", "rmse_w", "n_points"}
KEYS |= {"linear_ok", "method"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "points.csv"
    path.write_text(text)
    return path


def _good_rows(header: str = "host,utilization,power_w,note", sep: str = ",") -> str:
    rng = np.random.default_rng(4)
    rows = [header]
    for u in np.repeat(np.linspace(0, 1, 6), 2):
        rows.append(sep.join(["n1", f"{u:.3f}", f"{30 + 40 * u + rng.normal(0, 0.3):.2f}", "x"]))
    return "\n".join(rows) + "\n"


def _good_csv(tmp_path: Path) -> Path:
    return _write(tmp_path, _good_rows())


def _fit_json(path: Path) -> dict:
    result = CliRunner().invoke(cli, ["calibrate", "fit", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize(
    ("header", "sep", "bom"),
    [
        ("host,utilisation,power_w,note", ",", False),  # the spelling the rest of EAMS writes
        ("host, Utilization, Power_W, note", ", ", False),  # spaces after commas, letter case
        ("host,UTILISATION ,power_w,note", ",", True),  # Excel's "CSV UTF-8": a BOM first
    ],
)
def test_the_csvs_people_have_fit_as_the_plain_one(
    tmp_path: Path, header: str, sep: str, bom: bool
) -> None:
    reference = _fit_json(_good_csv(tmp_path))
    path = tmp_path / "variant.csv"
    path.write_bytes(("\ufeff" if bom else "").encode() + _good_rows(header, sep).encode())
    variant = _fit_json(path)
    assert variant["p_idle_w"] == pytest.approx(reference["p_idle_w"], rel=1e-12)
    assert variant["p_max_w"] == pytest.approx(reference["p_max_w"], rel=1e-12)
    assert variant["n_points"] == 12


def test_json_has_the_issue_keys(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["calibrate", "fit", str(_good_csv(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload.keys() >= KEYS
    assert payload["n_points"] == 12
    assert payload["p_idle_ci95_w"][0] < 30 < payload["p_idle_ci95_w"][1]
    assert payload["p_max_ci95_w"][0] < 70 < payload["p_max_ci95_w"][1]
    assert payload["linear_ok"] is True
    assert len(payload["levels"]) == 6


def test_text_report_names_the_values(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["calibrate", "fit", str(_good_csv(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "P_idle" in result.output and "95 % CI" in result.output
    assert "linear_ok: yes" in result.output and "measured active idle" in result.output


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("u,power_w\n0,1\n", r"missing column 'utilisation' \(or 'utilization'\); row 1 has: u,"),
        ("utilization,watts\n0,1\n", r"missing column 'power_w'"),
        ("utilisation,utilization,power_w\n0,0,1\n", r"2 utilisation columns"),
        ("utilization,power_w\n0,10\n0.5,20,7\n1,30\n", r"row 3 has 3 fields, the header 2"),
        ("utilization,power_w\n0,10\n0,5,20\n1,30\n", r"row 3 has 3 fields.*0\.5, not 0,5"),
        ("utilisation,power_w\n", r"no data rows \(only the header\)"),
        # power falling with load is no node's sweep (it fitted P_max < P_idle, "linear")
        (
            "utilisation,power_w\n0,40\n0,41\n0.5,30\n0.5,31\n1,20\n1,21.5\n",
            r"power falls as load rises \(P_max 20\.\d\d W < P_idle 40\.\d\d W\)",
        ),
        # three points exactly on a line: the 95 % intervals would be zero wide
        ("utilisation,power_w\n0,10\n0.5,20\n1,30\n", r"the 3 points lie exactly on a line"),
        # the same far from the ends (the intervals would be zero wide even extrapolated)
        ("utilisation,power_w\n0.4,18\n0.5,20\n0.6,22\n", r"lie exactly on a line"),
        (
            "utilization,power_w\n0,10\n0.5,20\n1.5,30\n1,31\n",
            r"row 4, column 'utilization': 1.5 is outside 0–1",
        ),
        ("utilization,power_w\n0,10\n0.5,nan\n1,30\n", r"row 3, column 'power_w': nan is not"),
        ("Utilization,power_w\n0,10\nNaN,20\n1,30\n", r"row 3, column 'Utilization': nan"),
        ("utilization,power_w\n0,10\n0.5,\n1,30\n", r"row 3, column 'power_w': '' is not a number"),
        ("utilization,power_w\n0,10\n0.5,abc\n1,30\n", r"row 3, column 'power_w': 'abc'"),
        (
            "utilization,power_w\n0,10\n0,11\n1,30\n1,31\n",
            r"column 'utilization': only 2 distinct level\(s\) \(0, 1\)",
        ),
        ("utilization,power_w\n0,0\n0.5,20\n1,30\n", r"column 'power_w': 1 of 3 .*\(row 2\)"),
        # an impossible reading: weight 0, yet it swamped R², the RMSE and the idle-step test
        (
            "utilisation,power_w\n0,60\n0.25,75\n0.5,90\n0.75,1e9\n1,120.4\n0,60.5\n",
            r"row 5, column 'power_w': 1e\+09 W is above 50000 W",
        ),
        ("", r"missing column 'utilisation' \(or 'utilization'\); row 1 has: nothing"),
    ],
)
def test_bad_csv_is_refused_naming_row_and_column(tmp_path: Path, text: str, match: str) -> None:
    path = _write(tmp_path, text)
    result = CliRunner().invoke(cli, ["calibrate", "fit", str(path)])
    assert isinstance(result.exception, FitError)
    assert str(result.exception).startswith(str(path))
    assert re.search(match, str(result.exception)), str(result.exception)


def test_floor_refuses_readings_under_it(tmp_path: Path) -> None:
    path = _write(tmp_path, "utilization,power_w\n0,45\n0.5,60\n1,80\n")
    result = CliRunner().invoke(cli, ["calibrate", "fit", str(path), "--floor-w", "50"])
    assert isinstance(result.exception, FitError)
    assert "row 2" in str(result.exception) and "floor of 50 W" in str(result.exception)


def test_the_command_prints_one_line_and_exits_1(tmp_path: Path) -> None:
    path = _write(tmp_path, "utilization,power_w\n0,10\n2,20\n1,30\n")
    done = subprocess.run(
        [sys.executable, "-c", "from eams.cli import main; main()", "calibrate", "fit", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "row 3, column 'utilization': 2 is outside 0–1" in done.stderr


@pytest.mark.parametrize(
    "rows",
    [
        ["0,60", "0.5,90", "1,120", "0,60", "0.5,90", "1,121"],  # replicates, most on the line
        ["0,60", "0.25,75", "0.5,90", "0.75,105", "1,121"],  # 5 levels, the last 1 W off
    ],
)
def test_whole_watt_readings_give_intervals_and_keep_a_1_w_step(
    tmp_path: Path, rows: list[str]
) -> None:
    # Whole-watt PDU readings: most residuals are exactly 0, so the MAD scale alone is 0; the
    # readings' resolution (1 W, uniform error 1/√12 W) floors it.
    payload = _fit_json(_write(tmp_path, "utilisation,power_w\n" + "\n".join(rows) + "\n"))
    for key, true_w in (("p_idle_ci95_w", 60.0), ("p_max_ci95_w", 120.5)):
        lo, hi = payload[key]
        assert hi - lo > 0.5, (key, lo, hi)  # not zero wide: at least the rounding's spread
        assert lo < true_w < hi
    assert min(level["weight"] for level in payload["levels"]) > 0.5  # 121 W is no outlier


def test_csv_resolution_is_the_smallest_step_at_most_1_w() -> None:
    from eams.calibrate.csvinput import csv_resolution_w

    assert csv_resolution_w([60, 90, 120, 121, 60]) == 1.0
    assert csv_resolution_w([60, 90, 120]) == 1.0  # sparse: no step seen that small
    assert csv_resolution_w([60.1, 60.2, 90.0]) == pytest.approx(0.1)
    assert csv_resolution_w([60, 60]) is None
