"""The method table is the one place methods live: the inventory's validation, the sleep states
and the help of ``eams power suspend`` all read it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from eams.actuators.errors import InventoryError
from eams.actuators.inventory import parse_inventory
from eams.actuators.methods import METHODS, suspends
from eams.actuators.transitions import STATES
from eams.cli import cli


def _inventory(**entry: object) -> dict[str, object]:
    return {"pdu": "snmp://private@192.0.2.2", "nodes": {"mini2": {"ssh": "root@h", **entry}}}


def test_the_table_names_each_method_once_with_a_sleep_state() -> None:
    assert list(METHODS) == ["wol", "ssh", "outlet"]
    assert {name: m.sleep_state for name, m in METHODS.items()} == {
        "wol": "suspended", "ssh": "soft_off", "outlet": "off",
    }  # fmt: skip
    assert all(m.sleep_state in STATES for m in METHODS.values())
    assert [name for name in METHODS if suspends(name)] == ["wol"]


@pytest.mark.parametrize("name", list(METHODS))
def test_the_inventory_asks_each_method_for_the_fields_it_requires(name: str) -> None:
    entry = {"method": name, "mac": "02:ea:a5:00:00:01", "outlet": 2}
    parse_inventory(_inventory(**entry), Path("."), "inv.yaml")
    for field in set(METHODS[name].requires) - {"ssh"}:
        data = _inventory(**{k: v for k, v in entry.items() if k != field})
        with pytest.raises(InventoryError, match=f"method {name} needs {field}"):
            parse_inventory(data, Path("."), "inv.yaml")


def test_an_unknown_method_names_the_ones_there_are() -> None:
    with pytest.raises(InventoryError, match="method 'ipmi' is not one of wol, ssh, outlet"):
        parse_inventory(_inventory(method="ipmi"), Path("."), "inv.yaml")


def test_a_method_that_switches_outlets_needs_the_inventorys_pdu() -> None:
    data = {"nodes": {"mini2": {"method": "outlet", "outlet": 2, "ssh": "root@h"}}}
    with pytest.raises(InventoryError, match="pdu is required by the outlet method of mini2"):
        parse_inventory(data, Path("."), "inv.yaml")


def test_the_suspend_help_is_the_tables() -> None:
    result = CliRunner().invoke(cli, ["power", "suspend", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for name, method in METHODS.items():
        assert f"{method.sleeps_by} (method {name})" in result.output
