"""The power-state methods, one module each, and :data:`METHODS`, the one table of them.

Everything that knows what methods exist reads this table: the inventory's validation (the
names, the fields each needs), the façade's dispatch, the power manager's sleep state, the help
of ``eams power`` and the power-state measurement (whether a node can suspend). A new method is
one module implementing :class:`~.base.Method` and one line here (``actuators/README.md``).
"""

from eams.actuators.methods.base import Method
from eams.actuators.methods.outlet import Outlet
from eams.actuators.methods.ssh import Ssh
from eams.actuators.methods.wol import Wol

METHODS: dict[str, type[Method]] = {
    "wol": Wol,
    "ssh": Ssh,
    "outlet": Outlet,
}
"""Inventory method name → its class."""


def known_method(name: str) -> str:
    """``name`` if :data:`METHODS` has it (a pydantic validator of ``method`` fields).

    Raises
    ------
    ValueError
        Naming the methods there are.
    """
    if name not in METHODS:
        raise ValueError(f"method {name!r} is not one of {', '.join(METHODS)}")
    return name


def suspends(method: str) -> bool:
    """True when ``method``'s sleep is a suspend (wakes fast, draws P_suspend) rather than an
    off state; raises KeyError for a method that is not in :data:`METHODS`."""
    return METHODS[method].sleep_state == "suspended"


__all__ = ["METHODS", "Method", "known_method", "suspends"]
