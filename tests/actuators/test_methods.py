"""The method table is the one place methods live: the inventory's validation, the sleep states
and the help of ``eams power suspend`` all read it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from eams.actuators.errors import InventoryError
from eams.actuators.inventory import parse_inventory
from eams.actuators.methods import METHODS, suspends
from eams.actuators.steps import StepKit
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


def test_a_step_s_window_is_its_own_thread_s_when_threads_act_at_once() -> None:
    """One façade acting from several threads at once (the demo measures five nodes
    together): the window a transition records is the step its own thread ran, never the one
    another thread ran meanwhile (it was one shared attribute before: a boot's energy window
    could start at another node's switch)."""
    kit = StepKit(None)
    first_acted, second_acted = threading.Event(), threading.Event()
    seen: dict[str, tuple[float, float] | None] = {}

    def first() -> None:
        kit.acted = (1.0, 2.0)
        first_acted.set()
        second_acted.wait(5)
        seen["first"] = kit.acted

    def second() -> None:
        first_acted.wait(5)
        kit.acted = (3.0, 4.0)
        second_acted.set()
        seen["second"] = kit.acted

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"first": (1.0, 2.0), "second": (3.0, 4.0)}
    assert kit.acted is None  # this thread ran no step
