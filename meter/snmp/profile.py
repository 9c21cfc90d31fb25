"""Decode walked SNMP columns into a Reading's values, as ``profiles.yaml`` describes them.

A profile names, per MIB family, the columns to walk and how to turn each raw integer into SI
units. Every field is one of:

- an OID *column*: every instance below it is a row, keyed by the index suffix;
- ``scale``: raw × scale gives W, A, V or Wh (kW → W is 1000, tenths of A is 0.1, kWh → Wh
  is 1000);
- ``digits``: a sibling column with the same index holding the number of decimal digits
  (Raritan PDU2 ``*SensorDecimalDigits``): value = raw × scale / 10**digits;
- ``suffix``: keep only rows whose index ends with this number and drop it (Raritan PDU2
  indexes its sensor tables by sensor type: 1 current, 4 voltage, 5 active power, 8 energy);
- ``invalid``: raw values that mean "not available" (APC answers -1) and decode to ``None``;
  any other negative value is ``None`` too, and recorded as a problem (a PDU meters
  consumption only; EATON-EPDU-MIB: "a negative value indicates that this object is not
  available");
- ``rows``: keep only these indexes (CyberPower's ePDULoadStatusTable lists phases, then the
  banks that subdivide them: the single-phase total is row 1);
- a list of such specs: candidates, the first that yields a value wins (APC rPDU2 device power
  falls back to the older rPDU scalar on models that answer -1).

Totals are the sum over the rows of their column (one row for a scalar, several for phases,
banks or cords); when some row gives no value the total is ``None``, not a partial sum. A value
that fails (missing, ``invalid``, a string where a number belongs) is ``None``; the failure is
recorded in :attr:`Decoded.problems` (never 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from eams.meter.errors import UnknownDevice
from eams.meter.snmp.client import Value, oid_in_subtree

Index = tuple[int, ...]
Rows = dict[Index, tuple[str, Value]]

OUTLET_FIELDS = ("power_w", "current_a", "voltage_v", "energy_wh")
TOTAL_FIELDS = ("power_w", "energy_wh")


@dataclass(frozen=True)
class FieldSpec:
    """How one column decodes (see the module docstring for the keys)."""

    oid: str
    scale: float = 1.0
    digits: str | None = None
    suffix: int | None = None
    invalid: tuple[int, ...] = ()
    rows: tuple[tuple[int, ...], ...] | None = None

    @classmethod
    def parse(cls, raw: Any, where: str) -> tuple[FieldSpec, ...]:
        """One spec or a list of candidate specs from YAML; raises UnknownDevice if malformed."""
        items = raw if isinstance(raw, list) else [raw]
        specs = []
        for item in items:
            if isinstance(item, str):
                item = {"oid": item}
            if not isinstance(item, dict) or "oid" not in item:
                raise UnknownDevice(f"profiles.yaml: {where}: needs an 'oid'")
            unknown = set(item) - {"oid", "scale", "digits", "suffix", "invalid", "rows"}
            if unknown:
                raise UnknownDevice(f"profiles.yaml: {where}: unknown key(s) {sorted(unknown)}")
            specs.append(
                cls(
                    oid=str(item["oid"]).lstrip("."),
                    scale=float(item.get("scale", 1.0)),
                    digits=str(item["digits"]).lstrip(".") if item.get("digits") else None,
                    suffix=item.get("suffix"),
                    invalid=tuple(item.get("invalid", ())),
                    rows=tuple(tuple(r) for r in item["rows"]) if "rows" in item else None,
                )
            )
        return tuple(specs)

    def roots(self) -> list[str]:
        """The columns this spec needs walked."""
        return [self.oid] + ([self.digits] if self.digits else [])


@dataclass
class Decoded:
    """What a profile made of one walk.

    Attributes
    ----------
    outlets : list of dict
        Per outlet (in outlet order): ``outlet``, ``name``, the :data:`OUTLET_FIELDS` and
        ``state`` (``"on"``, ``"off"`` or ``None``).
    total : dict
        ``power_w`` and ``energy_wh`` of the device (``None`` where not offered).
    sources : dict
        ``(outlet number or None for the total, field)`` → the OIDs the value came from (a
        sum lists all its terms; field ``"state"`` for the outlet state); the recorded-PDU test
        matches them to its oracle.
    problems : list of str
        Every value that failed to decode, with its OID and why.
    switch_candidate : int or None
        Which of the family's ``switch`` candidates the device answered (its index).
    switch_rows : dict of int to Index
        Outlet number → the outlet's index in that candidate's tables (where it can switch).
    """

    outlets: list[dict[str, Any]] = field(default_factory=list)
    total: dict[str, float | None] = field(default_factory=dict)
    sources: dict[tuple[int | None, str], tuple[str, ...]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    switch_candidate: int | None = None
    switch_rows: dict[int, Index] = field(default_factory=dict)

    def value_count(self) -> int:
        """How many values decoded, outlet states included (0: nothing usable)."""
        numbers = [v for v in self.total.values() if v is not None]
        for row in self.outlets:
            numbers += [row[f] for f in (*OUTLET_FIELDS, "state") if row.get(f) is not None]
        return len(numbers)


def rows_of(walked: dict[str, list[tuple[str, Value]]], column: str) -> Rows:
    """The instances of ``column`` keyed by index suffix (a tuple of ints)."""
    rows: Rows = {}
    for oid, value in walked.get(column, []):
        if oid_in_subtree(oid, column) and oid != column:
            rows[tuple(int(p) for p in oid[len(column) + 1 :].split("."))] = (oid, value)
    return rows


def _number(
    oid: str, raw: Value, spec: FieldSpec, digits: Value, problems: list[str]
) -> float | None:
    if raw is None:
        problems.append(f"{oid}: no such object")
        return None
    if isinstance(raw, bool) or not isinstance(raw, int):
        problems.append(f"{oid}: {raw!r} is not a number")
        return None
    if raw in spec.invalid:
        return None
    if raw < 0:  # a PDU meters consumption only: e.g. Eaton's "negative = not available"
        problems.append(f"{oid}: {raw} is negative, not a measurement")
        return None
    value = raw * spec.scale
    if spec.digits:
        if not isinstance(digits, int) or not 0 <= digits <= 9:
            problems.append(f"{oid}: decimal digits {digits!r} unusable")
            return None
        value /= 10**digits
    return round(value, 9) if math.isfinite(value) else None


class ColumnReader:
    """Decode the rows of one (candidate list of) field spec(s) from a walk."""

    def __init__(self, specs: tuple[FieldSpec, ...]) -> None:
        self.specs = specs

    def roots(self) -> list[str]:
        """Every column any candidate needs."""
        return [root for spec in self.specs for root in spec.roots()]

    def read(
        self, walked: dict[str, list[tuple[str, Value]]], problems: list[str]
    ) -> dict[Index, tuple[float | None, str]]:
        """Rows → (value, OID) for the first candidate that yields any value."""
        result: dict[Index, tuple[float | None, str]] = {}
        kept: list[str] = []
        for spec in self.specs:
            digits = rows_of(walked, spec.digits) if spec.digits else {}
            attempt: dict[Index, tuple[float | None, str]] = {}
            local: list[str] = []
            for index, (oid, raw) in sorted(rows_of(walked, spec.oid).items()):
                if spec.suffix is not None and (not index or index[-1] != spec.suffix):
                    continue
                if spec.rows is not None and index not in spec.rows:
                    continue
                d = digits.get(index, (None, None))[1]
                key = index[:-1] if spec.suffix is not None else index
                attempt[key] = (_number(oid, raw, spec, d, local), oid)
            if any(v is not None for v, _ in attempt.values()):
                problems.extend(local)
                return attempt
            if attempt and not result:
                result, kept = attempt, local
        if result:
            problems.extend(kept)
        return result
