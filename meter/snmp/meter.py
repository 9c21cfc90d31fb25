"""``SnmpMeter``: one PDU over SNMP, read in one call into a :class:`~eams.meter.reading.Reading`.

On the first read it GETs sysObjectID and sysDescr and picks the family (unless a driver was
named), then every read is one parallel GETBULK walk of that family's columns, decoded by
:mod:`eams.meter.snmp.profile`. Configuration columns (Raritan's decimal digits) are walked on
the first read only, and so are the switch-state candidates the device does not answer; a
state read from a sensor table (Raritan PDU2's onOff sensor, one row in 17 of its column) is
fetched by GET of the rows it found on later reads, not walked again.

A value that fails to decode (noSuchObject, a string where a number belongs, a vendor's
"not available" code) becomes ``None`` and is listed in :attr:`SnmpMeter.last_problems`; the
read still succeeds. Only when *nothing at all* decodes does the read raise
:class:`~eams.meter.errors.MeterProtocolError`, naming the first problems.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, Protocol

from eams.meter.errors import MeterProtocolError
from eams.meter.reading import OutletReading, Reading
from eams.meter.snmp.client import MAX_VARBINDS, Value
from eams.meter.snmp.profile import OUTLET_FIELDS, Decoded, Index, rows_of
from eams.meter.snmp.registry import Family, detect, family
from eams.meter.snmp.switchspec import read_states
from eams.meter.url import MeterUrl

log = logging.getLogger(__name__)

SYS_DESCR = "1.3.6.1.2.1.1.1.0"
SYS_OBJECT_ID = "1.3.6.1.2.1.1.2.0"


class SnmpTransport(Protocol):
    """What a meter needs of a client: :class:`~eams.meter.snmp.client.SnmpClient` or a fake."""

    requests: int

    async def get(self, oids: list[str]) -> dict[str, Value]: ...

    async def walk(self, roots: list[str]) -> dict[str, list[tuple[str, Value]]]: ...

    async def set(self, oid: str, value: int) -> None: ...

    async def close(self) -> None: ...


def _names(fam: Family, walked: dict[str, list[tuple[str, Value]]]) -> dict[Index, Value]:
    """Outlet labels from the first name column that has rows."""
    for column in fam.outlet_names:
        rows = rows_of(walked, column)
        if rows:
            return {i: v for i, (_, v) in rows.items()}
    return {}


def decode(fam: Family, walked: dict[str, list[tuple[str, Value]]]) -> Decoded:
    """Turn one walk of ``fam.roots()`` into outlet rows, totals, sources and problems.

    Outlets are the union of the metered rows and the switch-state rows, joined by index (the
    vendors index both tables alike); a PDU that switches but does not meter has outlets with
    a state and no power.
    """
    out = Decoded()
    columns = {f: r.read(walked, out.problems) for f, r in fam.outlets.items()}
    spec, states = read_states(fam.switch, walked, out.problems)
    if spec is not None:
        out.switch_candidate = fam.switch.index(spec)
    names = _names(fam, walked)
    numbers = (
        {i: v for i, (_, v) in rows_of(walked, fam.outlet_number).items()}
        if fam.outlet_number
        else {}
    )
    indexes = sorted({i for rows in columns.values() for i in rows} | set(states))
    present = []  # (index, printed number or None)
    for index in indexes:
        number = numbers.get(index)
        if isinstance(number, int) and number <= 0:
            continue  # an empty slot of a fixed-size table (APC cPDU rows 41-64): no outlet
        if not isinstance(number, int):
            number = index[-1] if fam.numbering == "last" and index else None
        present.append((index, number))
    if len({n for _, n in present}) != len(present) or None in {n for _, n in present}:
        # Daisy-chained units or tower.infeed.outlet tables: number the outlets 1, 2, ...
        present = [(index, ordinal) for ordinal, (index, _) in enumerate(present, start=1)]
    numbered = [(index, number) for index, number in present if number is not None]  # all of them
    for index, number in numbered:
        name = names.get(index)
        row: dict[str, Any] = {
            "outlet": number,
            "name": name.strip() or None if isinstance(name, str) else None,
        }
        for f in OUTLET_FIELDS:
            value, oid = columns.get(f, {}).get(index, (None, ""))
            row[f] = value
            if value is not None:
                out.sources[(number, f)] = (oid,)
        state, state_oid = states.get(index, (None, ""))
        row["state"] = state
        if state_oid:
            out.sources[(number, "state")] = (state_oid,)
            out.switch_rows[number] = index
        out.outlets.append(row)
    for f, reader in fam.total.items():
        rows = reader.read(walked, out.problems)
        values = [v for v, _ in rows.values() if v is not None]
        if values and len(values) < len(rows):  # a sum missing a phase/cord is no total
            failed = [oid for v, oid in rows.values() if v is None]
            out.problems.append(f"total {f}: not summed, {', '.join(failed)} gave no value")
            values = []
        out.total[f] = sum(values) if values else None
        if values:
            out.sources[(None, f)] = tuple(oid for _, oid in rows.values())
    return out


class SnmpMeter:
    """A metered PDU reached over SNMP (implements :class:`eams.meter.base.Meter`).

    Parameters
    ----------
    url : MeterUrl
        ``snmp://`` or ``snmpv3://``.
    client : SnmpTransport
        The transport (``SnmpClient`` for a real agent).
    driver : str, optional
        A family name from ``profiles.yaml``; skips auto-detection.

    Attributes
    ----------
    family : Family or None
        The family in use (known after the first read, or at once when ``driver`` is given).
    last_decoded : Decoded or None
        Everything the last read decoded, with the OIDs of each value.
    """

    def __init__(self, url: MeterUrl, client: SnmpTransport, driver: str | None = None) -> None:
        self.url = url
        self.client = client
        self.family: Family | None = family(driver) if driver else None
        self.last_decoded: Decoded | None = None
        self._static: dict[str, list[tuple[str, Value]]] = {}
        self._skip: set[str] | None = None  # state columns not walked after the first read
        self._state_gets: tuple[str, list[str]] | None = None  # (column, instances) to GET

    @property
    def last_problems(self) -> list[str]:
        """The values of the last read that failed to decode (OID and why)."""
        return list(self.last_decoded.problems) if self.last_decoded else []

    async def detect(self) -> Family:
        """GET sysObjectID and sysDescr and pick the family (cached).

        Raises
        ------
        UnknownDevice
            If no family matches.
        MeterTimeout, MeterAuthError, MeterUnreachable, MeterProtocolError
        """
        if self.family is None:
            answer = await self.client.get([SYS_OBJECT_ID, SYS_DESCR])
            oid, descr = answer.get(SYS_OBJECT_ID), answer.get(SYS_DESCR)
            where = f"{self.url.host}:{self.url.port}"
            if not isinstance(oid, str):
                raise MeterProtocolError(f"{where}: {SYS_OBJECT_ID}: no sysObjectID ({oid!r})")
            descr_text = descr if isinstance(descr, str) else ""
            self.family = detect(oid, descr_text, where)
        return self.family

    async def read(self) -> Reading:
        """Read every outlet and the device total in one parallel GETBULK walk.

        Returns
        -------
        Reading
            In W, A, V and Wh; ``read_at`` is when the last answer arrived (UTC).

        Raises
        ------
        MeterProtocolError
            If the device answered but no value at all (not even an outlet state) decodes.
        UnknownDevice, MeterTimeout, MeterAuthError, MeterUnreachable
        """
        fam = await self.detect()
        where = f"{self.url.host}:{self.url.port}"
        skip = self._skip or set()
        roots = [r for r in fam.roots() if r not in self._static and r not in skip]
        walked = await self.client.walk(roots)
        if self._state_gets is not None:
            column, instances = self._state_gets
            got: dict[str, Value] = {}
            for start in range(0, len(instances), MAX_VARBINDS):
                got.update(await self.client.get(instances[start : start + MAX_VARBINDS]))
            walked[column] = [(oid, got.get(oid)) for oid in instances]
        read_at = datetime.now(UTC)
        if not self._static:  # decimal digits are configuration: keep the first non-empty walk
            self._static = {r: walked[r] for r in fam.static_roots() if walked.get(r)}
        walked = {**walked, **self._static}
        decoded = decode(fam, walked)
        self.last_decoded = decoded
        if self._skip is None:
            used = decoded.switch_candidate
            state = fam.switch[used].state if used is not None else None
            chosen = {state.oid} if state is not None and state.suffix is None else set()
            self._skip = set(fam.roots()) - set(fam.roots(states=False)) - chosen
            if state is not None and state.suffix is not None:
                found = [oids[0] for (_, f), oids in decoded.sources.items() if f == "state"]
                self._state_gets = (state.oid, found)
        if decoded.value_count() == 0:
            why = "; ".join(decoded.problems[:3]) or f"nothing under {', '.join(fam.roots()[:3])}"
            raise MeterProtocolError(f"{where}: {fam.name}: no value decodes ({why})")
        for problem in decoded.problems:
            log.info("%s: %s", where, problem)
        return Reading(
            meter=self.url.redacted(),
            read_at=read_at,
            driver=fam.name,
            outlets=tuple(self._outlet(fam, row) for row in decoded.outlets),
            total_power_w=decoded.total.get("power_w"),
            total_energy_wh=decoded.total.get("energy_wh"),
            accuracy_pct=fam.accuracy_pct,
            floor_w=fam.floor_w,
        )

    @staticmethod
    def _outlet(fam: Family, row: dict[str, Any]) -> OutletReading:
        power, current = row["power_w"], row["current_a"]
        below = False
        if row.get("state") == "off":
            pass  # the relay is open: the outlet draws nothing, a 0 W reading is exact
        elif power is not None and fam.floor_w is not None:
            below = power < fam.floor_w
        elif current is not None and fam.floor_a is not None:
            below = current < fam.floor_a
        return OutletReading(**row, below_floor=below)

    async def close(self) -> None:
        """Close the transport. Idempotent."""
        await self.client.close()
