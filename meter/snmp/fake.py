"""``FakeSnmpClient``: an agent in memory, fed from an ``.snmprec`` file (OID → value).

For fast unit tests of the decoding: it answers :meth:`get` and :meth:`walk` like
:class:`~eams.meter.snmp.client.SnmpClient` (same value types, same subtree rule), counting one
request per call, and :meth:`set` stores the value and nothing else (a recording has no device
behind it, so a switch never takes effect). The recorded-PDU tests still go through snmpsim
and pysnmp.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eams.meter.snmp.client import Value, oid_in_subtree, oid_key

_INTEGER_TAGS = {"2", "65", "66", "67", "70"}  # Integer32, Counter32, Gauge32, TimeTicks, Counter64


def parse_snmprec(text: str) -> dict[str, Value]:
    """``oid|tag|value`` lines → OID → value (``int``, ``str`` or ``bytes`` as the client gives).

    Raises
    ------
    ValueError
        For a line that is not ``oid|tag|value``, naming its number.
    """
    values: dict[str, Value] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("|", 2)
        if len(parts) != 3:
            raise ValueError(f"snmprec line {number}: {line[:60]!r} is not oid|tag|value")
        oid, tag, raw = parts
        if tag in _INTEGER_TAGS:
            values[oid] = int(raw)
        elif tag == "4x":
            data = bytes.fromhex(raw)
            try:
                values[oid] = data.decode("utf-8")
            except UnicodeDecodeError:
                values[oid] = data
        else:
            values[oid] = raw
    return values


class FakeSnmpClient:
    """An in-memory agent with the :class:`~eams.meter.snmp.meter.SnmpTransport` methods.

    Attributes
    ----------
    values : dict of str to Value
        The agent's objects in OID order.
    """

    def __init__(self, values: dict[str, Value]) -> None:
        self.values = dict(sorted(values.items(), key=lambda item: oid_key(item[0])))
        self.requests = 0

    @classmethod
    def from_file(cls, path: Path) -> FakeSnmpClient:
        """Load an ``.snmprec`` recording."""
        return cls(parse_snmprec(path.read_text(encoding="utf-8", errors="replace")))

    async def get(self, oids: Sequence[str]) -> dict[str, Value]:
        """Values of ``oids``; ``None`` for absent ones (noSuchObject)."""
        self.requests += 1
        return {oid: self.values.get(oid) for oid in oids}

    async def walk(self, roots: Sequence[str]) -> dict[str, list[tuple[str, Value]]]:
        """Every instance under each root, in OID order."""
        self.requests += 1
        return {
            root: [(oid, v) for oid, v in self.values.items() if oid_in_subtree(oid, root)]
            for root in roots
        }

    async def set(self, oid: str, value: int) -> None:
        """Store ``value`` at ``oid`` (no side effect on any other object)."""
        self.requests += 1
        self.values[oid] = value

    async def close(self) -> None:
        """Nothing to release."""
