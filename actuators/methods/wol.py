"""Method ``wol``: suspend-to-RAM over SSH, woken by a magic packet (Wake-on-LAN from S3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eams.actuators.methods.base import Action

if TYPE_CHECKING:
    from eams.actuators.steps import StepKit


class Wol:
    """``systemctl suspend`` over SSH; a magic packet wakes it (:class:`.base.Method`)."""

    sleep_state = "suspended"
    requires: tuple[str, ...] = ("mac", "ssh")
    requires_inventory: tuple[str, ...] = ()
    sleeps_by = "suspend-to-RAM"
    wakes_by = "magic packet"

    def __init__(self, kit: StepKit) -> None:
        self.kit = kit

    def sleep(self, node: str) -> Action:
        return self.kit.systemctl(node, "suspend")

    def poweroff(self, node: str) -> Action:
        return self.kit.systemctl(node, "poweroff")

    def wake(self, node: str) -> Action:
        return self.kit.magic_packet(node)
