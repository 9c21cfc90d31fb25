"""Run the agent playbook with ansible-playbook against real sshd "nodes" on loopback.

Each inventory host is an sshd on its own port with its own root directory (venv, config,
state and systemd unit directories), so three hosts on one machine do not overwrite each
other. systemd is not PID 1 here, so ``eams_agent_manage_service`` is false: the unit is
rendered and checked, not started.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from eams.agent.config import load_config
from eams.actuators.inventory import load_inventory
from tests.ansible.conftest import ANSIBLE_PLAYBOOK, REPO
from tests.servers.sshd import SshServer

pytestmark = pytest.mark.integration

PLAYBOOKS = REPO / "ansible"
EAMS = Path(sys.executable).parent / "eams"
RECAP = re.compile(
    r"^(?P<host>\S+)\s+:\s+ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
    r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)",
    re.M,
)


def _host_vars(
    node: SshServer, root: Path, name: str, outlet: int | None, power: bool = True
) -> dict:
    host = {
        "ansible_host": node.host,
        "ansible_port": node.port,
        "ansible_user": node.user,
        "ansible_become": False,
        "ansible_python_interpreter": "/usr/bin/python3",
        "ansible_ssh_private_key_file": str(node.client_key),
        "eams_node_name": name,
        "eams_power_cap_w": 65,
        "eams_venv_dir": str(root / "opt/eams/venv"),
        "eams_config_dir": str(root / "etc/eams"),
        "eams_state_dir": str(root / "var/lib/eams"),
        "eams_systemd_dir": str(root / "etc/systemd/system"),
    }
    if outlet is not None:
        host["eams_pdu_outlet"] = outlet
    if power:
        host["eams_power_method"] = "wol"
        host["eams_mac"] = f"02:ea:a5:00:00:{outlet or 0:02x}"
    return host


def write_inventory(
    tmp: Path,
    nodes: list[SshServer],
    wheel: Path,
    *,
    missing_outlet: int | None = None,
    missing_power: int | None = None,
    unreachable_port: int | None = None,
) -> Path:
    """An inventory of ``nodes`` (node1 owns the PDU), optionally one host without an outlet,
    one without its power method and MAC, and one host on a closed port."""
    hosts = {
        f"node{i}": _host_vars(
            n, tmp / f"node{i}", f"node{i}", None if i == missing_outlet else i, i != missing_power
        )
        for i, n in enumerate(nodes, start=1)
    }
    if unreachable_port is not None:
        ghost = _host_vars(nodes[0], tmp / "ghost", "ghost", len(nodes) + 1)
        ghost["ansible_port"] = unreachable_port
        hosts["ghost"] = ghost
    known_hosts = tmp / "known_hosts"
    known_hosts.write_text("".join(n.known_hosts.read_text() for n in nodes))
    inventory = {
        "all": {
            "vars": {
                "ansible_ssh_common_args": f"-o UserKnownHostsFile={known_hosts} "
                "-o StrictHostKeyChecking=yes -o ConnectTimeout=5",
                "eams_wheel": str(wheel),
                # A wheel without its dependencies keeps the test fast; the rendered config is
                # validated by this checkout's own `eams agent check-config` instead.
                "eams_pip_extra_args": "--no-deps",
                "eams_agent_validate_command": f"{sys.executable} -m eams.agent check-config %s",
                "eams_agent_power_validate_command": f"{EAMS} power check-inventory %s",
                "eams_agent_manage_service": False,
                "eams_pdu_url": "snmp://public@127.0.0.1:16100",
                "eams_influx_url": "http://127.0.0.1:8086",
                "eams_influx_org": "eams",
                "eams_influx_bucket": "eams",
                "eams_influx_token": "test-token",
                "eams_extender_url": "http://127.0.0.1:8888",
                "eams_snmp_auth_key": "",
                "eams_snmp_priv_key": "",
            },
            "children": {
                "eams_nodes": {"hosts": dict.fromkeys(hosts)},
                "pdu_owner": {"hosts": {"node1": None}},
                "k3s_server": {"hosts": {"node1": None}},
                "k3s_agents": {"hosts": dict.fromkeys(h for h in hosts if h != "node1")},
            },
        }
    }
    for name, host_vars in hosts.items():
        inventory["all"]["children"]["eams_nodes"]["hosts"][name] = host_vars
    path = tmp / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    return path


def run_playbook(inventory: Path, playbook: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``ansible-playbook -i inventory playbook extra…`` from the ansible/ folder."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
    }
    return subprocess.run(
        [str(ANSIBLE_PLAYBOOK), "-i", str(inventory), playbook, *extra],
        cwd=PLAYBOOKS,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def recap(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, int]]:
    """PLAY RECAP counts per host."""
    return {
        m["host"]: {k: int(m[k]) for k in ("ok", "changed", "unreachable", "failed")}
        for m in RECAP.finditer(result.stdout)
    }


def test_agent_playbook_installs_renders_and_is_idempotent(
    tmp_path: Path,
    ssh_nodes: list[SshServer],
    eams_wheel: Path,
    udp_port: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EAMS_INFLUX_TOKEN", "checked-by-load-config")
    # One host's port is closed: it is reported unreachable (exit status 4) and the play goes
    # on with the others.
    inventory = write_inventory(tmp_path, ssh_nodes, eams_wheel, unreachable_port=udp_port)
    first = run_playbook(inventory, "agent.yml")
    counts = recap(first)
    assert first.returncode == 4, first.stdout + first.stderr
    assert counts.pop("ghost")["unreachable"] == 1
    assert all(c["changed"] > 0 and c["failed"] == 0 for c in counts.values()), first.stdout

    for i in (1, 2, 3):
        root = tmp_path / f"node{i}"
        version = subprocess.run(
            [
                str(root / "opt/eams/venv/bin/python"),
                "-c",
                "import importlib.metadata as m; print(m.version('eams'))",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert version == "0.1.0"
        config_path = root / "etc/eams/agent.yaml"
        config = load_config(config_path)
        assert config.node == f"node{i}"
        assert config.power_cap_w == 65
        assert {sink.type for sink in config.sinks} == {"influx_v2", "extender"}
        owner = i == 1
        assert (config.meter is not None) == owner
        if owner:
            assert config.outlet_nodes() == {
                1: ("node1", 65.0),
                2: ("node2", 65.0),
                3: ("node3", 65.0),
                4: ("ghost", 65.0),
            }
        unit = (root / "etc/systemd/system/eams-agent.service").read_text()
        assert (
            f"ExecStart={root}/opt/eams/venv/bin/python -m eams.agent run --config {config_path}"
            in unit
        )
        power = root / "etc/eams/power.yaml"
        assert power.exists() == owner  # node1 is the k3s server: the power actions run there
        if owner:
            inventory_ = load_inventory(power)
            assert sorted(inventory_.nodes) == ["ghost", "node1", "node2", "node3"]
            first = inventory_.node("node1")
            assert (first.method, first.mac, first.outlet) == ("wol", "02:ea:a5:00:00:01", 1)
            assert first.k3s_server and first.pdu_owner and not inventory_.node("node2").pdu_owner
            assert first.ssh == f"root@127.0.0.1:{ssh_nodes[0].port}"
            assert inventory_.pdu == "snmp://public@127.0.0.1:16100"
        env_file = root / "etc/eams/agent.env"
        assert "EAMS_INFLUX_TOKEN=test-token" in env_file.read_text()
        assert env_file.stat().st_mode & 0o777 == 0o600

    second = run_playbook(inventory, "agent.yml")
    counts = recap(second)
    assert second.returncode == 4, second.stdout + second.stderr
    assert counts.pop("ghost")["unreachable"] == 1
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in counts.values()), second.stdout


def _directives(unit: str) -> list[str]:
    return [line.split("=", 1)[0] for line in unit.splitlines() if "=" in line and line[0] != "#"]


def test_the_rendered_unit_is_the_agents_own_unit() -> None:
    """The ansible template is agent/eams-agent.service with the inventory's paths: the same
    directives, so the two cannot drift apart (the shipped unit also sets User/Group and
    StateDirectory for its fixed paths)."""
    shipped = _directives((REPO / "agent" / "eams-agent.service").read_text())
    template = _directives(
        (PLAYBOOKS / "roles/eams_agent/templates/eams-agent.service.j2").read_text()
    )
    assert [d for d in shipped if d not in ("User", "Group", "StateDirectory")] == template


def test_missing_outlet_stops_with_a_clear_message(
    tmp_path: Path, ssh_nodes: list[SshServer], eams_wheel: Path
) -> None:
    inventory = write_inventory(tmp_path, ssh_nodes, eams_wheel, missing_outlet=2)
    # node3 is fine and would go on to install; limit to the two hosts that must stop.
    result = run_playbook(inventory, "agent.yml", "--limit", "node1,node2")
    assert result.returncode == 2, result.stdout
    assert "node2: set eams_node_name, eams_power_cap_w (W, > 0) and" in result.stdout
    assert "every node in eams_nodes needs its own eams_pdu_outlet" in result.stdout
    assert "'node2': 0" in result.stdout


def test_a_node_without_its_power_method_and_mac_stops_with_a_clear_message(
    tmp_path: Path, ssh_nodes: list[SshServer], eams_wheel: Path
) -> None:
    inventory = write_inventory(tmp_path, ssh_nodes, eams_wheel, missing_power=3)
    result = run_playbook(inventory, "agent.yml", "--limit", "node3")
    assert result.returncode == 2, result.stdout
    assert "node3: set eams_power_method (wol, ssh or outlet) and, for wol and" in result.stdout
    assert "got method (unset), mac (unset)" in result.stdout
    assert recap(result)["node3"]["failed"] == 1
    assert not (tmp_path / "node3" / "etc/eams/agent.yaml").exists()


def test_wrong_vault_password_is_refused(
    tmp_path: Path, ssh_nodes: list[SshServer], eams_wheel: Path
) -> None:
    inventory = write_inventory(tmp_path, ssh_nodes, eams_wheel)
    group_vars = tmp_path / "group_vars" / "all"
    group_vars.mkdir(parents=True)
    secret = group_vars / "vault.yml"
    secret.write_text("vault_eams_influx_token: from-the-vault\n")
    right, wrong = tmp_path / "right.txt", tmp_path / "wrong.txt"
    right.write_text("correct horse battery staple\n")
    wrong.write_text("not the password\n")
    subprocess.run(
        [
            str(ANSIBLE_PLAYBOOK.parent / "ansible-vault"),
            "encrypt",
            "--vault-password-file",
            str(right),
            str(secret),
        ],
        check=True,
        capture_output=True,
    )
    assert secret.read_text().startswith("$ANSIBLE_VAULT;")
    result = run_playbook(inventory, "agent.yml", "--vault-password-file", str(wrong))
    assert result.returncode != 0
    assert "Decryption failed" in result.stdout + result.stderr


def test_site_playbook_in_check_mode(
    tmp_path: Path, ssh_nodes: list[SshServer], eams_wheel: Path
) -> None:
    """k3s and the scheduler manifests cannot run here (no systemd as PID 1, no k3s): the whole
    site playbook runs in check mode instead. The k3s download is skipped too: get_url contacts
    the release server even in check mode, and this machine has no network to it."""
    inventory = write_inventory(tmp_path, ssh_nodes[:1], eams_wheel)  # node1: server, owner
    result = run_playbook(
        inventory,
        "site.yml",
        "--check",
        "--skip-tags",
        "k3s-download",
        "-e",
        "k3s_manage_service=false",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for task in (
        "TASK [k3s : Write the k3s systemd unit]",
        "TASK [eams_calibration : Run the calibration sweep]",
        "TASK [eams_agent : Write the agent configuration]",
        "TASK [eams_scheduler : Copy the EAMS scheduler manifests]",
    ):
        assert task in result.stdout
    assert not (tmp_path / "node1" / "etc").exists()  # check mode wrote nothing
