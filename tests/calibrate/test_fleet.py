"""``eams calibrate fleet``: several nodes from one inventory, one summary, failures isolated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from eams.calibrate.calfile import load_calibration
from eams.calibrate.errors import SweepError
from eams.calibrate.fleet import Inventory
from eams.cli import cli
from eams.meter.simulator import PduSimulator
from tests.conftest import free_port
from tests.servers.sshd import SshServer


@pytest.mark.integration
@pytest.mark.usefixtures("stress_ng")
def test_fleet_sweeps_each_node_and_summarises(
    ssh_server: SshServer, pdu: PduSimulator, tmp_path: Path
) -> None:
    inventory = tmp_path / "fleet.yaml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "meter": pdu.url,
                "out_dir": "cal",
                "reference": "loop",
                "identity": str(ssh_server.client_key),
                "known_hosts": str(ssh_server.known_hosts),
                "nodes": {
                    "loop": {"ssh": ssh_server.target, "outlet": 1},
                    "gone": {"ssh": f"root@127.0.0.1:{free_port()}", "outlet": 2},
                },
            }
        )
    )
    args = ["calibrate", "fleet", "--inventory", str(inventory), "--levels", "0,50,100"]
    args += ["--settle-s", "1.5", "--measure-s", "1", "--sample-s", "0.25", "--allow-contention"]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "200"})
    assert isinstance(result.exception, SweepError)
    assert "loop" in result.output and "gone" in result.output and "failed" in result.output
    assert not (tmp_path / "cal" / "gone.json").exists()
    if not (tmp_path / "cal" / "loop.json").exists():
        # other work saturated this machine: loop was swept all the same (gone's failure did
        # not stop it), and its fit was refused for that reason, its raw sweep kept
        failed = str(result.exception)
        assert failed.startswith("2 of 2 node(s) failed: ") and "loop" in failed, result.output
        cells = " ".join(re.sub("[│┃]", " ", result.output).split())  # rich wraps the cell
        assert "other work kept the node busy" in cells, result.output
        assert (tmp_path / "cal" / "loop.partial.json").exists()
        return
    assert "1 of 2 node(s) failed: gone" in str(result.exception), result.output
    cal = load_calibration(tmp_path / "cal" / "loop.json", expect_node="loop")
    assert cal.speed == 1.0 and cal.speed_reference.reference == "loop"


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("nodes: {}\n", r"field 'nodes'"),
        ("nodes: {a: {outlet: 1}}\n", r"field 'nodes.a.meter': no meter"),
        ("meter: snmp://h\nnodes: {a: {outlet: 0}}\n", r"field 'nodes.a.outlet'"),
        ("meter: snmp://h\nnodes: {a: {outlet: 1, color: red}}\n", r"field 'nodes.a.color'"),
        ("meter: snmp://h\nreference: b\nnodes: {a: {outlet: 1}}\n", r"'b' is not a node"),
        ("nodes: [\n", r"not YAML"),
    ],
)
def test_bad_inventories_are_refused_naming_the_field(
    tmp_path: Path, content: str, match: str
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(content)
    with pytest.raises(SweepError, match=match):
        Inventory.load(path)


def test_every_bad_field_of_an_inventory_is_named_in_one_message(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text("meter: snmp://h\nnodes: {a: {outlet: 0}, b: {outlet: 1, color: red}}\nx: 1\n")
    with pytest.raises(SweepError) as caught:
        Inventory.load(path)
    assert str(caught.value) == (
        f"{path}: field 'nodes.a.outlet': Input should be greater than or equal to 1; "
        "field 'nodes.b.color': Extra inputs are not permitted; "
        "field 'x': Extra inputs are not permitted"
    )


def test_inventory_paths_are_relative_to_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text("meter: snmp://h\nidentity: keys/id\nnodes: {a: {outlet: 1}}\n")
    inventory = Inventory.load(path)
    assert inventory.identity == tmp_path / "keys" / "id"
    assert inventory.out_dir == tmp_path / "calibration"
