"""``eams bench sweep`` on Dask distributed: the same result files on a local cluster of two
workers, of one, and on a separately started scheduler and worker; a sweep killed half-way keeps
its finished cells and a rerun into the same folder runs only the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml
from click.testing import CliRunner, Result

from eams.cli import cli
from eams.datasets import DATA_DIR_ENV
from eams.scheduler.bench.checkpoint import FILE_NAME, CellLog
from eams.scheduler.bench.errors import SweepError
from eams.scheduler.bench.manifest import parse_manifest
from tests.servers.dask_cluster import dask_cluster

# 2 schedulers × {none, pm} × 2 ρ × 1 seed: 8 cells, the four eams ones ~0.3 s each
MANIFEST = {
    "name": "fanout",
    "trace": {"source": "synthetic", "synthetic": {"pods": 60}},
    "cluster": {"nodes": 6, "server_models": 3},
    "schedulers": ["most-allocated", "eams"],
    "rho": [0.5, 1.2],
    "seeds": [1],
    "workers": 2,
}
CELLS = 8
RESULT_FILES = ("results.json", "results.csv", "summary.txt")


def sweep(manifest: Path, out: Path, *options: str) -> Result:
    """``eams bench sweep`` in this process; fails the test on a non-zero exit."""
    args = ["bench", "sweep", "--manifest", str(manifest), "--out", str(out), *options]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    return result


def same_files(out: Path, reference: Path) -> None:
    for name in RESULT_FILES:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


def lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / FILE_NAME).read_text().splitlines()]


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("manifest") / "fanout.yaml"
    path.write_text(yaml.safe_dump(MANIFEST))
    return path


@pytest.fixture(scope="module")
def reference(shared_data, manifest, tmp_path_factory) -> Path:
    """The sweep on a local cluster of the manifest's two workers."""
    out = tmp_path_factory.mktemp("two-workers")
    sweep(manifest, out)
    assert len(lines(out)) == CELLS
    return out


def test_one_worker_gives_the_files_of_two(reference, manifest, tmp_path) -> None:
    sweep(manifest, tmp_path, "--workers", "1")
    same_files(tmp_path, reference)
    results = json.loads((tmp_path / "results.json").read_text())
    assert "workers" not in results["manifest"] and len(results["results"]) == CELLS
    assert len({r["energy_j"] for r in results["results"]}) == CELLS  # eight different cells


def test_a_separately_started_cluster_gives_the_same_files(
    reference, manifest, shared_data, tmp_path
) -> None:
    env = {**os.environ, DATA_DIR_ENV: str(shared_data)}
    with dask_cluster(tmp_path / "cluster", env) as scheduler:
        sweep(manifest, tmp_path / "out", "--cluster", scheduler.address)
        worker_log = (tmp_path / "cluster" / "dask-worker.log").read_text()
    same_files(tmp_path / "out", reference)
    assert "Starting Worker" in worker_log  # the cells ran on the other process


def test_the_engine_variable_names_the_cluster(manifest, tmp_path) -> None:
    result = CliRunner().invoke(
        cli,
        ["bench", "sweep", "--manifest", str(manifest), "--out", str(tmp_path), "--workers", "2"],
        env={"DASK_SCHEDULER_ADDRESS": "tcp://127.0.0.1:1"},
    )
    assert result.exit_code == 2
    assert "--workers sizes the local cluster; --cluster has its own workers" in result.output


def test_a_killed_sweep_resumes_with_only_the_missing_cells(reference, manifest, tmp_path) -> None:
    out = tmp_path / "out"
    eams = Path(sys.executable).with_name("eams")  # the installed command, in its own process
    argv = [str(eams), "bench", "sweep", "--manifest", str(manifest)]
    process = subprocess.Popen(
        [*argv, "--out", str(out), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log = out / FILE_NAME
    try:
        while not (log.exists() and log.read_text().count("\n") >= 1):
            assert process.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.02)
        workers = psutil.Process(process.pid).children(recursive=True)
    finally:
        process.kill()  # SIGKILL: no clean-up of any kind
        process.wait()
    kept = len(lines(out))
    assert 1 <= kept < CELLS
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, "the local cluster's processes outlived the sweep"
    with log.open("a") as handle:  # a line the kill cut short
        handle.write('{"manifest_sha256": "')

    result = sweep(manifest, out, "--workers", "2")

    assert f"resuming: {kept} of {CELLS} cells already in" in result.output
    cells = [(r["figures"]["run"], r["figures"]["rho"]) for r in lines(out)]
    assert len(cells) == len(set(cells)) == CELLS  # the kept cells were not run again
    same_files(out, reference)


def test_cells_of_another_manifest_are_refused(reference, tmp_path) -> None:
    other = parse_manifest({**MANIFEST, "seeds": [2]})
    (tmp_path / FILE_NAME).write_bytes((reference / FILE_NAME).read_bytes())
    with pytest.raises(SweepError, match=rf"{FILE_NAME}:1: a cell of another manifest"):
        CellLog(tmp_path, other).load()
    assert len(CellLog(tmp_path, parse_manifest({**MANIFEST, "workers": 1})).load()) == CELLS
