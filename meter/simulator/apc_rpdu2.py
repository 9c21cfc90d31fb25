"""The APC rPDU2 object tree the simulator serves, computed from one instant of its outlets.

Imitates the recording ``pdu_snmp/snmprec/apc_apdu9959eu3.snmprec`` (an APC Rack PDU 2G on
AOS 2.5: system group, sysObjectID, the legacy ``sPDUIdent``/``rPDUIdent`` scalars,
rPDU2DeviceStatus, rPDU2PhaseStatus), plus the per-outlet metering tables that a
Metered-by-Outlet model (AP88xx) publishes, as defined in PowerNet-MIB (APC, file
``pdu_snmp/mibs/apc_PowerNet-MIB.gz``):

======================================  ==========================================  ============
object (PowerNet-MIB)                    OID                                          unit
======================================  ==========================================  ============
rPDU2DeviceStatusPower                   1.3.6.1.4.1.318.1.1.26.4.3.1.5.1             0.01 kW
rPDU2DeviceStatusEnergy                  1.3.6.1.4.1.318.1.1.26.4.3.1.9.1             0.1 kWh
rPDU2PhaseStatusCurrent / Voltage        …26.6.3.1.5.1 / …26.6.3.1.6.1                0.1 A / V
rPDU2OutletMeteredTableSize              1.3.6.1.4.1.318.1.1.26.9.3.0                 count
rPDU2OutletMeteredStatusName             1.3.6.1.4.1.318.1.1.26.9.4.3.1.3.N           text
rPDU2OutletMeteredStatusCurrent          1.3.6.1.4.1.318.1.1.26.9.4.3.1.6.N           0.1 A
rPDU2OutletMeteredStatusPower            1.3.6.1.4.1.318.1.1.26.9.4.3.1.7.N           W
rPDU2OutletMeteredStatusEnergy           1.3.6.1.4.1.318.1.1.26.9.4.3.1.11.N          0.1 kWh
rPDU2OutletSwitchedTableSize             1.3.6.1.4.1.318.1.1.26.9.1.0                 count
rPDU2OutletSwitchedConfigRebootDuration  1.3.6.1.4.1.318.1.1.26.9.2.1.1.7.N           s
rPDU2OutletSwitchedStatusState           1.3.6.1.4.1.318.1.1.26.9.2.3.1.5.N           off(1), on(2)
rPDU2OutletSwitchedControlCommand        1.3.6.1.4.1.318.1.1.26.9.2.4.1.5.N           read-write
======================================  ==========================================  ============

rPDU2OutletSwitchedControlCommand is the one writable object: immediateOn(1), immediateOff(2),
immediateReboot(3) (off, then on after the reboot duration); reading it gives immediateOn(1)
or immediateOff(2) for the present state, as the MIB says. The delayed commands are not
simulated (wrongValue). Energy counters are floored to their resolution (a counter never shows
energy not yet used); power and current are rounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pysnmp.proto.api import v2c

OID = tuple[int, ...]

SYS_OBJECT_ID: OID = (1, 3, 6, 1, 4, 1, 318, 1, 3, 4, 6)
"""sysObjectID of APC rPDU2 Rack PDUs (as in apc_ap8959eu3 and apc_apdu9959eu3 recordings)."""

MODEL = "AP8858EU3"
"""An APC Rack PDU 2G, Switched, Metered-by-Outlet, 24 outlets, 230 V (what we imitate)."""

SERIAL = "EAMSSIM00001"
SYS_DESCR = (
    "APC Web/SNMP Management Card (MB:v4.2.9 PF:v2.5.0.8 PN:apc_hw21_aos_2.5.0.8.bin "
    f"AF1:v2.5.0.6 AN1:apc_hw21_rpdu2g_2.5.0.6.bin MN:{MODEL} HR:01 SN: {SERIAL} "
    "MD:04/11/2023) "
)
"""Verbatim format of the recorded sysDescr (apc_apdu9959eu3), with our model and serial."""

_MIB2_SYSTEM: OID = (1, 3, 6, 1, 2, 1, 1)
_APC_HW: OID = (1, 3, 6, 1, 4, 1, 318, 1, 1)
RPDU2: OID = (*_APC_HW, 26)
RPDU2_OUTLET_METERED_STATUS: OID = (*RPDU2, 9, 4, 3, 1)
"""rPDU2OutletMeteredStatusEntry; column c of outlet n is this + (c, n)."""
RPDU2_OUTLET_SWITCHED: OID = (*RPDU2, 9, 2)
"""rPDU2OutletSwitched: 1 ConfigTable, 3 StatusTable, 4 ControlTable."""
CONTROL_COMMAND: OID = (*RPDU2_OUTLET_SWITCHED, 4, 1, 5)
"""rPDU2OutletSwitchedControlCommand; outlet n is this + (n,)."""
COMMANDS = {1: "on", 2: "off", 3: "reboot"}
"""rPDU2OutletSwitchedControlCommand values simulated: immediateOn/Off/Reboot (1, 2, 3)."""

OUTLET_RATING_W = 2300
"""rPDU2OutletMeteredPropertiesPowerRating: a 10 A C13 outlet at 230 V."""
NEAR_OVERLOAD_W = 1840
"""rPDU2OutletMeteredConfigNearOverloadCurrentThreshold (80 % of the rating, W)."""
DEVICE_RATING_A = 32
"""rPDU2DevicePropertiesMaxCurrentRating of a 32 A single-phase 2G PDU (A)."""


@dataclass(frozen=True, slots=True)
class OutletInstant:
    """One outlet at one instant (SI units; the MIB scaling is applied here, not by callers)."""

    name: str
    power_w: float
    current_a: float
    energy_wh: float
    peak_power_w: float
    switched_on: bool = True
    command_pending: bool = False


@dataclass(frozen=True, slots=True)
class PduInstant:
    """The whole PDU at one instant: what one snapshot of the object tree is computed from."""

    uptime_s: float
    started_at: str  # "MM/DD/YYYY hh:mm:ss", the format of the recorded timestamps
    voltage_v: float
    power_factor: float
    outlets: Sequence[OutletInstant]
    reboot_off_s: float = 5.0


def _load_state(power_w: float) -> int:
    """rPDU2OutletMeteredStatusState: lowLoad(1), normal(2), nearOverload(3), overload(4)."""
    if power_w <= 0:
        return 1
    if power_w >= OUTLET_RATING_W:
        return 4
    return 3 if power_w >= NEAR_OVERLOAD_W else 2


def command_outlet(oid: OID) -> int | None:
    """The outlet whose rPDU2OutletSwitchedControlCommand ``oid`` is, or ``None``."""
    return oid[-1] if len(oid) == len(CONTROL_COMMAND) + 1 and oid[:-1] == CONTROL_COMMAND else None


def _tenths_kwh(energy_wh: float) -> int:
    return math.floor(energy_wh / 100.0)


def _put_row(objects: dict[OID, object], entry: OID, index: int, values: Sequence) -> None:
    """Store one table row: column c (1-based) of row ``index`` at ``entry + (c, index)``."""
    for column, value in enumerate(values, start=1):
        objects[(*entry, column, index)] = (
            v2c.OctetString(value) if isinstance(value, str) else v2c.Integer32(value)
        )


def apc_rpdu2_objects(pdu: PduInstant) -> dict[OID, object]:
    """Every object the simulated APC rPDU2 serves, with its value at this instant.

    Parameters
    ----------
    pdu : PduInstant
        Outlet values in SI units.

    Returns
    -------
    dict of OID to pysnmp value
        Unordered; the agent sorts it for GETNEXT/GETBULK.
    """
    integer, text = v2c.Integer32, v2c.OctetString
    n_outlets = len(pdu.outlets)
    total_w = sum(o.power_w for o in pdu.outlets)
    total_a = sum(o.current_a for o in pdu.outlets)
    total_wh = sum(o.energy_wh for o in pdu.outlets)
    apparent_va = total_a * pdu.voltage_v
    objects: dict[OID, object] = {
        (*_MIB2_SYSTEM, 1, 0): text(SYS_DESCR),
        (*_MIB2_SYSTEM, 2, 0): v2c.ObjectIdentifier(SYS_OBJECT_ID),
        (*_MIB2_SYSTEM, 3, 0): v2c.TimeTicks(int(pdu.uptime_s * 100) % 2**32),
        (*_MIB2_SYSTEM, 4, 0): text("eams"),
        (*_MIB2_SYSTEM, 5, 0): text("eams-pdu-simulator"),
        (*_MIB2_SYSTEM, 6, 0): text("loopback"),
        # sPDUIdent and rPDUIdent (legacy scalars the recording also has)
        (*_APC_HW, 4, 1, 1, 0): text("01"),
        (*_APC_HW, 4, 1, 4, 0): text(MODEL),
        (*_APC_HW, 4, 1, 5, 0): text(SERIAL),
        (*_APC_HW, 12, 1, 2, 0): text("01"),
        (*_APC_HW, 12, 1, 5, 0): text(MODEL),
        (*_APC_HW, 12, 1, 6, 0): text(SERIAL),
        (*_APC_HW, 12, 1, 16, 0): integer(round(total_w)),  # rPDUIdentDevicePowerWatts
    }
    # rPDU2DevicePropertiesEntry (rPDU2Device 2), index 1
    properties = (1, 1, "EAMS-SIM", n_outlets, n_outlets, n_outlets, 1, 1, DEVICE_RATING_A, 1, 1)
    _put_row(objects, (*RPDU2, 4, 2, 1), 1, properties)
    # rPDU2DeviceStatusEntry (rPDU2Device 3), index 1
    device_status = (
        1,  # Index
        1,  # Module
        "EAMS-SIM",  # Name
        2,  # LoadState normal
        round(total_w / 10.0),  # Power, hundredths of kW
        round(sum(o.peak_power_w for o in pdu.outlets) / 10.0),  # PeakPower, 0.01 kW
        pdu.started_at,  # PeakPowerTimestamp
        pdu.started_at,  # PeakPowerStartTime
        _tenths_kwh(total_wh),  # Energy, tenths of kWh
        pdu.started_at,  # EnergyStartTime
        2,  # CommandPending: noCommandPending
        1,  # PowerSupplyAlarm: normal
        1,  # PowerSupply1Status: normal
        3,  # PowerSupply2Status: notInstalled
        pdu.started_at,  # OutletsEnergyStartTime
        round(apparent_va / 10.0),  # ApparentPower, hundredths of kVA
        round(pdu.power_factor * 100),  # PowerFactor, hundredths
        1,  # NPSType: notNPS
    )
    _put_row(objects, (*RPDU2, 4, 3, 1), 1, device_status)
    # rPDU2PhaseStatusEntry (rPDU2Phase 3), one phase
    phase_status = (
        1,
        1,
        1,
        2,
        round(total_a * 10),  # Current, tenths of A
        round(pdu.voltage_v),  # Voltage, V
        round(total_w / 10.0),  # Power, hundredths of kW
        round(apparent_va / 10.0),  # ApparentPower, hundredths of kVA
        round(pdu.power_factor * 100),  # PowerFactor, hundredths
        round(total_a * 10),  # PeakCurrent, tenths of A
        pdu.started_at,
        pdu.started_at,
    )
    _put_row(objects, (*RPDU2, 6, 3, 1), 1, phase_status)
    objects[(*RPDU2, 9, 3, 0)] = integer(n_outlets)  # rPDU2OutletMeteredTableSize
    objects[(*RPDU2, 9, 1, 0)] = integer(n_outlets)  # rPDU2OutletSwitchedTableSize
    for n, outlet in enumerate(pdu.outlets, start=1):
        # Config: Index, Module, Name, Number, PowerOnTime, PowerOffTime, RebootDuration, Link
        reboot_s = round(pdu.reboot_off_s)
        switched_config = (n, 1, outlet.name, n, 0, 0, reboot_s, "")
        _put_row(objects, (*RPDU2_OUTLET_SWITCHED, 1, 1), n, switched_config)
        on_off = 2 if outlet.switched_on else 1  # on(2), off(1)
        pending = 1 if outlet.command_pending else 2  # commandPending(1), noCommandPending(2)
        switched_status = (n, 1, outlet.name, n, on_off, pending, "")
        _put_row(objects, (*RPDU2_OUTLET_SWITCHED, 3, 1), n, switched_status)
        command = 1 if outlet.switched_on else 2  # a GET reads immediateOn(1) / immediateOff(2)
        _put_row(objects, (*RPDU2_OUTLET_SWITCHED, 4, 1), n, (n, 1, outlet.name, n, command))
        config = (n, 1, outlet.name, n, 0, NEAR_OVERLOAD_W, OUTLET_RATING_W, "")
        _put_row(objects, (*RPDU2, 9, 4, 1, 1), n, config)
        _put_row(objects, (*RPDU2, 9, 4, 2, 1), n, (n, 1, outlet.name, n, 1, OUTLET_RATING_W, 1))
        status = (
            n,  # Index
            1,  # Module
            outlet.name,  # Name
            n,  # Number
            _load_state(outlet.power_w),  # State
            round(outlet.current_a * 10),  # Current, tenths of A
            round(outlet.power_w),  # Power, W
            round(outlet.peak_power_w),  # PeakPower, W
            pdu.started_at,  # PeakPowerTimestamp
            pdu.started_at,  # PeakPowerStartTime
            _tenths_kwh(outlet.energy_wh),  # Energy, tenths of kWh
            "C13",  # ReceptacleType
            "",  # ExternalLink
        )
        _put_row(objects, RPDU2_OUTLET_METERED_STATUS, n, status)
    # the firmware revisions that follow rPDU2 in the recording, so a walk leaves the subtree
    objects[(1, 3, 6, 1, 4, 1, 318, 1, 4, 2, 4, 1, 4, 1)] = text("v2.5.0.8")
    objects[(1, 3, 6, 1, 4, 1, 318, 1, 4, 2, 4, 1, 4, 2)] = text("v2.5.0.6")
    return objects
