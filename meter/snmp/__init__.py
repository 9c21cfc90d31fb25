"""SNMP metered PDUs: the pysnmp transport, the PDU family table, and the meter."""

from eams.meter.snmp.meter import SnmpMeter
from eams.meter.snmp.registry import Family, detect, families, family

__all__ = ["Family", "SnmpMeter", "detect", "families", "family"]
