"""``eams power manage``: bad inputs refused with one ``eams: error:`` line (2 a bad option
value, 1 a bad file), and a real run as the console script in shadow mode against the real
API server (``tests/servers/kube_control_plane.py``, as the manager's service account):
decisions logged, counted on /metrics and recorded, nothing patched, and a clean exit 0 on
SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from eams.cli import cli, run_cli
from eams.scheduler.record import Query, read_records
from tests.actuators.conftest import drained
from tests.conftest import free_port
from tests.power.live import calibrate, node_doc, workload_pod
from tests.servers.kube_control_plane import ControlPlane
from tests.servers.kube_documents import clear, load, node

EAMS = str(Path(sys.executable).parent / "eams")
INVENTORY = {
    "nodes": {
        "a": {"method": "wol", "mac": "02:00:00:00:00:01", "ssh": "root@127.0.0.1:1",
              "agent_url": "http://127.0.0.1:1/metrics"},
        "server": {"method": "wol", "mac": "02:00:00:00:00:02", "ssh": "root@127.0.0.1:1",
                   "k3s_server": True},
    }
}  # fmt: skip


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    inventory = tmp_path / "power.yaml"
    inventory.write_text(yaml.safe_dump(INVENTORY))
    calibrate(tmp_path / "cal", "a")
    calibrate(tmp_path / "cal", "server", wake_energy_j=None)
    (tmp_path / "empty").mkdir()
    return {"inventory": inventory, "cal": tmp_path / "cal", "empty": tmp_path / "empty"}


def run(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        run_cli(cli, "eams", ["power", "manage", *args])
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def one_error(status: int, err: str, code: int, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert status == code and len(lines) == 1 and lines[0].startswith("eams: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize(
    ("config", "needles"),
    [
        ({"policy": {"idle_before_sleeps": 1}}, ["policy.idle_before_sleeps", "Extra inputs"]),
        ({"policy": {"min_awake": -1}}, ["policy.min_awake", "greater than or equal to 0"]),
        ({"manager": {"agent_silent_s": 0}}, ["manager.agent_silent_s"]),
        ({"pollicy": {}}, ["pollicy"]),
        ([1, 2], ["expected a mapping"]),
    ],
)
def test_a_bad_config_file_is_refused_naming_the_field(
    files, tmp_path: Path, capsys, config, needles
) -> None:
    path = tmp_path / "manage.yaml"
    path.write_text(yaml.safe_dump(config))
    base = ["--inventory", str(files["inventory"]), "--calibrations", str(files["cal"])]
    status, out, err = run([*base, "--config", str(path)], capsys)
    one_error(status, err, 1, str(path), *needles)
    assert out == ""


@pytest.mark.parametrize(
    ("args", "code", "needles"),
    [
        (["--mode", "sleepy"], 2, ["--mode", "sleepy"]),
        (["--interval-s", "0"], 2, ["--interval-s"]),
        (["--interval-s", "nan"], 2, ["--interval-s", "not a finite number"]),
        (["--metrics-port", "70000"], 2, ["--metrics-port"]),
        (["--calibrations", "EMPTY"], 1, ["no calibration file"]),
        (["--calibrations", "/nonexistent/cal"], 1, ["--calibrations", "not a folder"]),
        (["--inventory", "/nonexistent/power.yaml"], 1, ["/nonexistent/power.yaml", "cannot read"]),
        (["--kubeconfig", "/nonexistent/kubeconfig"], 1, ["no Kubernetes API configured"]),
        (["--in-cluster", "--kubeconfig", "/k"], 2, ["--kubeconfig or --in-cluster"]),
    ],
)
def test_bad_options_and_files_are_one_error_line(files, capsys, args, code, needles) -> None:
    given = {"--inventory": str(files["inventory"]), "--calibrations": str(files["cal"])}
    extra = [files["empty"].as_posix() if a == "EMPTY" else a for a in args]
    for flag in ("--inventory", "--calibrations"):
        if flag in extra:
            del given[flag]
    argv = [item for pair in given.items() for item in pair] + extra
    status, out, err = run(argv, capsys)
    one_error(status, err, code, *needles)
    assert out == ""


def test_a_shadow_run_decides_counts_and_records_and_stops_on_sigterm(
    files, k8s, tmp_path: Path, control_plane: ControlPlane
) -> None:
    """On the real API server, as the manager's service account; a's pods are the reference
    node's DaemonSet pods."""
    base, pods = k8s
    _, daemonsets = drained(base, pods)
    on_a = [{**p, "spec": {**p["spec"], "nodeName": "a"}} for p in daemonsets["items"]]
    config = tmp_path / "manage.yaml"
    config.write_text(yaml.safe_dump({"policy": {"idle_before_sleep_s": 0, "min_awake_s": 0,
                                                 "reserve_cores": 0}}))  # fmt: skip
    record, port = tmp_path / "record", free_port()
    with control_plane.client() as admin:
        load(admin, [node_doc(base, "a", taints=[]), node_doc(base, "server", cpu="1")],
             [*on_a, workload_pod("db", "server", "1")])  # fmt: skip
        before = {n: node(admin, n)["spec"] for n in ("a", "server")}
        argv = [
            EAMS, "power", "manage", "--inventory", str(files["inventory"]),
            "--calibrations", str(files["cal"]),
            "--kubeconfig", str(control_plane.kubeconfig("kube-system/eams-power-manager")),
            "--interval-s", "0.5", "--config", str(config), "--record", str(record),
            "--metrics-port", str(port),
        ]  # fmt: skip
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline, metrics = time.monotonic() + 30, ""
            wanted = 'eams_power_decisions_total{action="sleep",mode="shadow"'
            while wanted not in metrics:  # a's break-even is 4 s of idling
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline, metrics
                time.sleep(0.5)
                try:
                    metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
                except httpx.HTTPError:
                    continue
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        assert {n: node(admin, n)["spec"] for n in ("a", "server")} == before  # nothing patched
        assert not any("eams.io/" in k for k in node(admin, "a")["metadata"].get("annotations", {}))
        clear(admin, ["a", "server"])
    assert process.returncode == 0, err
    assert "power decision (shadow): sleep a idle-past-break-even" in out + err
    assert 'eams_power_nodes{state="awake"} 2.0' in metrics
    found = read_records(record, Query(node="a")).records
    assert [(type(r).__name__, r.reason, r.mode, r.to_state) for r in found] == [
        ("Power", "idle-past-break-even", "shadow", "suspended")
    ]
