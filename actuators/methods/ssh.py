"""Method ``ssh``: soft-off over SSH, woken by a magic packet — for a node whose NIC wakes from
soft-off (S5) but that cannot suspend."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eams.actuators.methods.base import Action

if TYPE_CHECKING:
    from eams.actuators.steps import StepKit


class Ssh:
    """``systemctl poweroff`` over SSH; a magic packet wakes it (:class:`.base.Method`)."""

    sleep_state = "soft_off"
    requires: tuple[str, ...] = ("mac", "ssh")
    requires_inventory: tuple[str, ...] = ()
    sleeps_by = "soft-off"
    wakes_by = "magic packet (WoL from S5)"

    def __init__(self, kit: StepKit) -> None:
        self.kit = kit

    def sleep(self, node: str) -> Action:
        note = f"node {node} cannot suspend (method ssh): powered off instead"
        return self.kit.systemctl(node, "poweroff", note=note)

    def poweroff(self, node: str) -> Action:
        return self.kit.systemctl(node, "poweroff")

    def wake(self, node: str) -> Action:
        return self.kit.magic_packet(node)
