"""The PDU simulator: virtual nodes behind an SNMP-metered, switched PDU on loopback.

Each outlet feeds one virtual node whose power follows its load through a power curve, and
whose power states (off, booting, running, suspended, soft-off...) follow the outlet's switch,
its OS and Wake-on-LAN. The demo and the tests of later components read it with the real meter
drivers.
"""

from eams.meter.simulator.agent import PduSimulator
from eams.meter.simulator.curves import LinearCurve, MeasuredCurve, SpecPowerRow, load_specpower
from eams.meter.simulator.errors import SimulatorError, SpecPowerError
from eams.meter.simulator.load import HostCpuLoad
from eams.meter.simulator.node import NodePower
from eams.meter.simulator.outlets import OutletState, VirtualOutlet

__all__ = [
    "HostCpuLoad",
    "LinearCurve",
    "MeasuredCurve",
    "ModbusMeterSimulator",
    "NodePower",
    "OutletState",
    "PduSimulator",
    "SimulatorError",
    "SpecPowerError",
    "SpecPowerRow",
    "VirtualOutlet",
    "load_specpower",
]


def __getattr__(name: str) -> object:
    # ModbusMeterSimulator pulls in pymodbus.server (and aiohttp): import it only when asked
    if name == "ModbusMeterSimulator":
        from eams.meter.simulator.modbus import ModbusMeterSimulator

        return ModbusMeterSimulator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
