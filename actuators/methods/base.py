"""The contract of a power-state method: how a node of that method sleeps, powers off and
wakes, the state its sleep leaves it in, and what the inventory must say for it.

A method builds :class:`Action` objects from the steps of a
:class:`~eams.actuators.steps.StepKit`; it does nothing itself. An action is the state it leads
to, a ``plan`` that touches nothing (it reads the PDU, so an unknown outlet or a PDU that cannot
switch fails there), an ``act`` that does it step by step, and whether it stops the node. The façade
(:class:`~eams.actuators.actions.PowerActions`) runs the safety rules before any action that
stops a node, then the plan, then the steps, and records each outcome as one transition, so a
method never sees a node that may not sleep.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from eams.actuators.steps import StepKit

Steps = list[str]


@dataclass(frozen=True, slots=True)
class Action:
    """One power action of one node, not yet done (module docstring).

    Attributes
    ----------
    to : str
        The state it leads to (:data:`eams.actuators.transitions.STATES`).
    plan : callable
        ``() -> steps``: checks and says what :attr:`act` would do; touches nothing.
    act : callable
        ``(done) -> None``: does it, appending each step to ``done`` once it is done.
    stops : bool
        True when it stops the node: the safety rules (:mod:`eams.actuators.safety`) run first.
    note : str
        What the operator should know, for the transition's ``detail``.
    """

    to: str
    plan: Callable[[], Steps]
    act: Callable[[Steps], None]
    stops: bool
    note: str = ""


class Method(Protocol):
    """One way to sleep and wake a node (one module of :mod:`eams.actuators.methods`).

    Attributes
    ----------
    sleep_state : str
        The state :meth:`sleep` leaves the node in: ``suspended``, ``soft_off`` or ``off``.
    requires : tuple of str
        The node's inventory fields this method needs (``mac``, ``outlet``, ``ssh``...).
    requires_inventory : tuple of str
        The inventory's own fields it needs (``pdu`` to switch outlets).
    sleeps_by, wakes_by : str
        In words, for the help of ``eams power`` and ``check-inventory``.
    """

    sleep_state: str
    requires: tuple[str, ...]
    requires_inventory: tuple[str, ...]
    sleeps_by: str
    wakes_by: str

    def __init__(self, kit: StepKit) -> None: ...

    def sleep(self, node: str) -> Action:
        """Put ``node`` into :attr:`sleep_state` (``eams power suspend``)."""
        ...

    def poweroff(self, node: str) -> Action:
        """Power ``node`` off (``eams power poweroff``)."""
        ...

    def wake(self, node: str) -> Action:
        """Bring ``node`` back to running."""
        ...
