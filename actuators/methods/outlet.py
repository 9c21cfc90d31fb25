"""Method ``outlet``: soft-off over SSH, then the node's PDU outlet off; woken by the outlet on
(its firmware powers on when power returns) — for a node that wakes by neither WoL nor SSH.

Before the soft-off, the outlet is switched to the state it has (on): an idempotent SET, read
back, that proves the PDU takes our SETs, so a read-only community is refused before the node
is touched, not after. The outlet is cut once the node's SSH port stops answering, after the
inventory's ``grace_s`` at most.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eams.actuators.errors import PowerActionFailed
from eams.actuators.methods.base import Action, Steps
from eams.meter.errors import MeterError

if TYPE_CHECKING:
    from eams.actuators.steps import StepKit


class Outlet:
    """Soft-off then outlet off; outlet on to wake (:class:`.base.Method`)."""

    sleep_state = "off"
    requires: tuple[str, ...] = ("outlet", "ssh")
    requires_inventory: tuple[str, ...] = ("pdu",)
    sleeps_by = "soft-off, then its outlet off"
    wakes_by = "outlet on (boots)"

    def __init__(self, kit: StepKit) -> None:
        self.kit = kit

    def sleep(self, node: str) -> Action:
        return self.poweroff(node)

    def poweroff(self, node: str) -> Action:
        kit = self.kit
        entry = kit.inventory.node(node)
        target = kit.target(node, entry)
        assert entry.outlet is not None  # the inventory requires it for method outlet

        def plan() -> Steps:
            switch = kit.switch_plan(node, entry, "off")
            wait = f"wait up to {kit.inventory.grace_s:g} s for {target} to stop answering"
            check = f"outlet {entry.outlet} on (as it is): the PDU takes our SETs"
            return [check, kit.systemctl_step(target, "poweroff"), wait, *switch]

        def act(done: Steps) -> None:
            try:  # a read-only community or user fails here, before the node is touched
                done.append(kit.switch(entry, "on") + ": write access checked")
            except MeterError as exc:
                raise PowerActionFailed(
                    f"node {node}: outlet {entry.outlet} cannot be switched: {exc}; nothing "
                    "was done"
                ) from exc
            kit.run_systemctl(node, entry, "poweroff", done)
            done.append(kit.wait_down(entry))
            try:
                done.append(kit.switch(entry, "off"))
            except MeterError as exc:
                raise PowerActionFailed(
                    f"node {node}: soft-off sent, but outlet {entry.outlet} was not switched "
                    f"off: {exc}; the node is soft-off with its outlet on"
                ) from exc

        return Action("off", plan, act, stops=True)

    def wake(self, node: str) -> Action:
        return self.kit.outlet(node, "on")
