"""``eams demo --quick`` end to end in a subprocess, as CI and a new user run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
EAMS = str(Path(sys.executable).with_name("eams"))  # the console script of this venv


def test_demo_quick_runs_to_the_end(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    env = {**os.environ, "COLUMNS": "120"}
    result = subprocess.run(
        [EAMS, "demo", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "read through driver apc_rpdu2" in result.stdout
    assert "mini-6" in result.stdout
