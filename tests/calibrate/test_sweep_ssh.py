"""Sweeps over SSH (paramiko) against a real sshd on loopback, and the ways SSH can refuse."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from eams.calibrate.errors import SweepError
from eams.calibrate.run import SshOptions, open_runner
from eams.calibrate.runners import SshJob, SshRunner
from eams.calibrate.runners.ssh import sweep_errors
from eams.calibrate.sweep import SweepPlan, SweepProgress, run_sweep
from eams.cli import cli
from eams.meter.blocking import BlockingMeter
from eams.meter.simulator import PduSimulator
from eams.ssh import SshClient, SshError, SshTarget
from tests.calibrate.conftest import bin_without, process_alive, recovered_or_refused
from tests.conftest import free_port
from tests.servers.sshd import SshServer, sshd

pytestmark = pytest.mark.integration


def _runner(server: SshServer, **kwargs: object) -> SshRunner:
    options = {"identity": server.client_key, "known_hosts": server.known_hosts, **kwargs}
    with sweep_errors():
        return SshRunner(SshClient(SshTarget.parse(server.target), **options))  # type: ignore[arg-type]


@pytest.mark.usefixtures("stress_ng")
def test_cli_sweep_over_ssh_recovers_the_hidden_line(
    ssh_server: SshServer, pdu: PduSimulator, tmp_path: Path
) -> None:
    out = tmp_path / "loop.json"
    args = ["calibrate", "sweep", "--node", "loop", "--meter", pdu.url, "--outlet", "1"]
    args += ["--ssh", ssh_server.target, "--identity", str(ssh_server.client_key)]
    args += ["--known-hosts", str(ssh_server.known_hosts), "--levels", "0,33,67,100"]
    args += ["--settle-s", "2", "--measure-s", "1.5", "--sample-s", "0.25"]
    result = CliRunner().invoke(cli, [*args, "--allow-contention", "--out", str(out)])
    assert result.exit_code in (0, 1), f"{result.output}\n{result.exception!r}"
    sweep, _ = recovered_or_refused(result.exception, out, "loop")  # this machine may be busy
    assert sweep.target == f"ssh://{ssh_server.target}"
    assert sweep.levels[-1].bogo_ops_per_s > 0


def test_unknown_host_key_is_refused(ssh_server: SshServer, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(SweepError, match=r"host key is not in .*--accept-unknown-host"):
        _runner(ssh_server, known_hosts=empty)
    assert empty.read_text() == ""


def test_cli_refuses_an_unknown_host_before_any_load(
    ssh_server: SshServer, pdu: PduSimulator, tmp_path: Path
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    out = tmp_path / "loop.json"
    args = ["calibrate", "sweep", "--node", "loop", "--meter", pdu.url, "--outlet", "1"]
    args += ["--ssh", ssh_server.target, "--identity", str(ssh_server.client_key)]
    result = CliRunner().invoke(cli, [*args, "--known-hosts", str(empty), "--out", str(out)])
    assert isinstance(result.exception, SweepError) and "not in" in str(result.exception)
    assert list(tmp_path.iterdir()) == [empty]


def test_accepting_an_unknown_host_saves_its_key(ssh_server: SshServer, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    runner = _runner(ssh_server, known_hosts=known, accept_unknown_host=True)
    try:
        assert runner.run(["echo", "hello"]).strip() == "hello"
    finally:
        runner.close()
    saved = known.read_text().split()
    assert saved[1:3] == ssh_server.host_key_line.split()[1:3]
    _runner(ssh_server, known_hosts=known).close()  # now known: accepted without the flag


def test_a_changed_host_key_is_refused_even_when_accepting(
    ssh_server: SshServer, tmp_path: Path
) -> None:
    other_key = ssh_server.client_key.with_suffix(".pub").read_text().split()[1]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{ssh_server.port} ssh-ed25519 {other_key}\n")
    with pytest.raises(SweepError, match="host key differs"):
        _runner(ssh_server, known_hosts=known, accept_unknown_host=True)


def test_a_key_the_node_does_not_authorise_is_refused(
    ssh_server: SshServer, tmp_path: Path
) -> None:
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    with pytest.raises(SweepError, match="key authentication refused"):
        _runner(ssh_server, identity=stranger)


def test_nothing_listening_is_named() -> None:
    with (
        pytest.raises(SweepError, match="cannot connect"),
        open_runner(f"root@127.0.0.1:{free_port()}", SshOptions()),
    ):
        pass


def test_stress_ng_missing_on_the_remote_node(
    pdu: PduSimulator, meter: BlockingMeter, tmp_path: Path
) -> None:
    path = bin_without(tmp_path, "stress-ng", ("sh", "cat", "getconf", "kill"))
    with sshd(env={"PATH": path}) as server:
        runner = _runner(server)
        try:
            with pytest.raises(SweepError, match=r"ssh://.*stress-ng is not installed on the node"):
                run_sweep(runner, meter, node="loop", meter_url=pdu.url, outlet=1)
        finally:
            runner.close()


@pytest.mark.usefixtures("stress_ng")
def test_ssh_drop_mid_sweep_stops_the_remote_load(
    ssh_server: SshServer, pdu: PduSimulator, meter: BlockingMeter
) -> None:
    runner = _runner(ssh_server)
    jobs: list[SshJob] = []
    start = runner.start

    def spy_start(argv: list[str]) -> SshJob:
        jobs.append(start(argv))
        return jobs[-1]

    runner.start = spy_start  # type: ignore[method-assign]

    def progress(event: SweepProgress) -> None:
        if event.index == 1 and event.phase == "measuring":
            transport = runner._ssh._client.get_transport()
            assert transport is not None
            transport.close()  # the network goes away

    plan = SweepPlan(
        (0, 50, 100), settle_s=2.0, measure_s=2.0, sample_s=0.25, allow_contention=True
    )
    try:
        with pytest.raises(SweepError, match="SSH connection lost") as info:
            run_sweep(
                runner,
                meter,
                node="loop",
                meter_url=pdu.url,
                outlet=1,
                plan=plan,
                progress=progress,
            )
    finally:
        runner.close()
    assert [lv.commanded_pct for lv in info.value.partial.levels] == [0]
    deadline = time.monotonic() + 10
    while process_alive(jobs[0].pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not process_alive(jobs[0].pid), "stress-ng kept running after the SSH drop"


def test_ssh_target_parsing() -> None:
    assert str(SshTarget.parse("root@10.0.0.1")) == "ssh://root@10.0.0.1:22"
    assert SshTarget.parse("eams@[::1]:2222") == SshTarget("eams", "::1", 2222)
    for bad in ("10.0.0.1", "root@", "root@h:0", "root@h:99999"):
        with pytest.raises(SshError, match="ssh target"):
            SshTarget.parse(bad)
