"""SNMP PDUs: the pysnmp transport, the PDU family table, the meter, and outlet switching."""

from eams.meter.snmp.meter import SnmpMeter
from eams.meter.snmp.registry import Family, detect, families, family
from eams.meter.snmp.switch import SwitchPlan, SwitchResult, switch_outlet

__all__ = [
    "Family",
    "SnmpMeter",
    "SwitchPlan",
    "SwitchResult",
    "detect",
    "families",
    "family",
    "switch_outlet",
]
