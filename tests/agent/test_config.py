"""Configuration: every case in ``cases/<name>/`` is a config.yaml with either expected.json
(valid) or error.txt (each line must appear in the one-line error)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eams.agent.config import load_config
from eams.agent.errors import ConfigError
from tests.agent.conftest import write_calibration, write_config

CASES = sorted(p for p in (Path(__file__).parent / "cases").iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_config_case(case: Path, tmp_path: Path) -> None:
    shutil.copy(case / "config.yaml", tmp_path / "config.yaml")
    write_calibration(tmp_path / "cal-node-a.json", "node-a")
    if (case / "error.txt").exists():
        with pytest.raises(ConfigError) as caught:
            load_config(tmp_path / "config.yaml")
        message = str(caught.value)
        assert "\n" not in message
        for expected in (case / "error.txt").read_text().splitlines():
            assert expected in message
        return
    config = load_config(tmp_path / "config.yaml")
    expected = json.loads((case / "expected.json").read_text())
    assert config.sink_names() == expected["sink_names"]
    assert {str(k): list(v) for k, v in config.outlet_nodes().items()} == expected["outlet_nodes"]
    assert config.sinks[0].url == expected["influx_v2_url"]
    assert config.sinks[-1].path == tmp_path / expected["jsonl_path"]
    assert config.spool.dir == tmp_path / expected["spool_dir"]
    assert config.calibration == tmp_path / expected["calibration"]


def test_calibration_of_another_node_is_refused(tmp_path: Path) -> None:
    write_calibration(tmp_path / "cal.json", "node-b")
    path = write_config(tmp_path, calibration="cal.json")
    with pytest.raises(
        ConfigError, match=r"calibration: .*the file is for node 'node-b', not 'node-a'"
    ):
        load_config(path)


def test_missing_calibration_file_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, calibration="absent.json")
    with pytest.raises(ConfigError, match=r"calibration: .*absent.json: cannot read"):
        load_config(path)


def test_token_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAMS_TEST_TOKEN", "t0ken")
    sink = {"type": "influx_v2", "url": "http://h:1", "bucket": "b", "org": "o"}
    path = write_config(tmp_path, sinks=[{**sink, "token_env": "EAMS_TEST_TOKEN"}])
    assert load_config(path).sinks[0].token_value() == "t0ken"
    both = write_config(tmp_path, sinks=[{**sink, "token": "x", "token_env": "EAMS_TEST_TOKEN"}])
    with pytest.raises(ConfigError, match=r"sinks\[0\]: give exactly one of token, token_env"):
        load_config(both)
