"""The PDU families of ``profiles.yaml``, and picking one for a device.

:func:`detect` picks the family whose ``sys_object_id`` prefix is the longest match of the
device's sysObjectID (Raritan ``.13742.4`` vs ``.13742.6``, Sentry ``.1718.3`` vs ``.1718.4``);
among equally long matches a family whose ``sys_descr`` pattern matches wins. ``--driver NAME``
skips detection (:func:`family`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from eams.meter.errors import UnknownDevice
from eams.meter.snmp.profile import OUTLET_FIELDS, TOTAL_FIELDS, ColumnReader, FieldSpec
from eams.meter.snmp.switchspec import SwitchSpec

_FAMILY_KEYS = {
    "title",
    "sys_object_id",
    "sys_descr",
    "accuracy_pct",
    "floor_w",
    "floor_a",
    "source",
    "outlets",
    "total",
    "switch",
    "no_switch",
}
_OUTLET_KEYS = {"name", "number", "numbering", *OUTLET_FIELDS}


@dataclass(frozen=True)
class Family:
    """One MIB family of ``profiles.yaml``: how to recognise it and what to walk.

    Attributes
    ----------
    name : str
        The driver name (``--driver``), e.g. ``apc_rpdu2``.
    title : str
        Human name of the family and MIB.
    sys_object_ids : tuple of str
        sysObjectID prefixes (dotted, no leading dot).
    sys_descr : re.Pattern or None
        A pattern sysDescr must match (searched), where the prefix alone is ambiguous.
    accuracy_pct, floor_w, floor_a : float or None
        The vendor's stated power accuracy (±%), and metering floor per outlet (W, A).
    source : str
        Where those figures come from.
    outlets : dict of str to ColumnReader
        Per-outlet fields (``power_w``, ``current_a``, ``voltage_v``, ``energy_wh``).
    outlet_names : tuple of str
        Columns with the outlet label (candidates: the first with rows is used).
    outlet_number : str or None
        Column with the outlet's printed number.
    numbering : {"last", "ordinal"}
        Outlet number from the last index component, or 1, 2, ... in index order (for
        tables indexed by tower.infeed.outlet). "last" falls back to ordinal when numbers
        would repeat (daisy-chained units).
    total : dict of str to ColumnReader
        ``power_w``/``energy_wh`` of the device, summed over the column's rows.
    switch : tuple of SwitchSpec
        Outlet state and switching tables (candidates; see :mod:`~eams.meter.snmp.switchspec`);
        empty for a family without switching.
    no_switch : str or None
        Why the family cannot switch (set exactly when ``switch`` is empty).
    """

    name: str
    title: str
    sys_object_ids: tuple[str, ...]
    sys_descr: re.Pattern[str] | None
    accuracy_pct: float | None
    floor_w: float | None
    floor_a: float | None
    source: str
    outlets: dict[str, ColumnReader]
    outlet_names: tuple[str, ...]
    outlet_number: str | None
    numbering: str
    total: dict[str, ColumnReader]
    switch: tuple[SwitchSpec, ...]
    no_switch: str | None

    def roots(self, states: bool = True) -> list[str]:
        """Every column a read walks (deduplicated, in a stable order); ``states=False``
        leaves out the switch-state columns."""
        roots: list[str] = []
        for reader in (*self.outlets.values(), *self.total.values()):
            roots += reader.roots()
        roots += [*self.outlet_names, *([self.outlet_number] if self.outlet_number else [])]
        if states:
            roots += [spec.state.oid for spec in self.switch]
        return list(dict.fromkeys(roots))

    def static_roots(self) -> list[str]:
        """Columns that are configuration, not measurement (decimal digits): walked once."""
        readers = (*self.outlets.values(), *self.total.values())
        return list(dict.fromkeys(s.digits for r in readers for s in r.specs if s.digits))


def _oid(text: Any) -> str:
    return str(text).lstrip(".")


def _family(name: str, raw: dict[str, Any]) -> Family:
    unknown = set(raw) - _FAMILY_KEYS
    if unknown:
        raise UnknownDevice(f"profiles.yaml: {name}: unknown key(s) {sorted(unknown)}")
    outlets_raw = dict(raw.get("outlets") or {})
    bad = set(outlets_raw) - _OUTLET_KEYS
    if bad:
        raise UnknownDevice(f"profiles.yaml: {name}.outlets: unknown key(s) {sorted(bad)}")
    total_raw = dict(raw.get("total") or {})
    bad = set(total_raw) - set(TOTAL_FIELDS)
    if bad:
        raise UnknownDevice(f"profiles.yaml: {name}.total: unknown key(s) {sorted(bad)}")
    numbering = outlets_raw.get("numbering", "last")
    if numbering not in ("last", "ordinal"):
        raise UnknownDevice(f"profiles.yaml: {name}.outlets.numbering: {numbering!r}")

    def num(key: str) -> float | None:
        value = raw.get(key)
        return None if value is None else float(value)

    switch = SwitchSpec.parse(raw["switch"], f"{name}.switch") if raw.get("switch") else ()
    if bool(switch) == bool(raw.get("no_switch")):
        raise UnknownDevice(
            f"profiles.yaml: {name}: give either 'switch' (its tables) or 'no_switch' (why none)"
        )
    names = outlets_raw.get("name") or []
    descr = raw.get("sys_descr")
    return Family(
        name=name,
        title=str(raw.get("title", name)),
        sys_object_ids=tuple(_oid(p) for p in raw.get("sys_object_id", ())),
        sys_descr=re.compile(descr) if descr else None,
        accuracy_pct=num("accuracy_pct"),
        floor_w=num("floor_w"),
        floor_a=num("floor_a"),
        source=str(raw.get("source", "")),
        outlets={
            f: ColumnReader(FieldSpec.parse(outlets_raw[f], f"{name}.outlets.{f}"))
            for f in OUTLET_FIELDS
            if f in outlets_raw
        },
        outlet_names=tuple(_oid(c) for c in (names if isinstance(names, list) else [names])),
        outlet_number=_oid(outlets_raw["number"]) if outlets_raw.get("number") else None,
        numbering=numbering,
        total={
            f: ColumnReader(FieldSpec.parse(total_raw[f], f"{name}.total.{f}"))
            for f in TOTAL_FIELDS
            if f in total_raw
        },
        switch=switch,
        no_switch=raw.get("no_switch"),
    )


@functools.cache
def families() -> dict[str, Family]:
    """Every family of the packaged ``profiles.yaml``, by driver name."""
    text = resources.files("eams.meter.snmp").joinpath("profiles.yaml").read_text("utf-8")
    raw = yaml.safe_load(text) or {}
    return {name: _family(name, body) for name, body in raw.items()}


def family(name: str) -> Family:
    """The family named ``name`` (``--driver``).

    Raises
    ------
    UnknownDevice
        If no family has that name; the message lists the known ones.
    """
    known = families()
    if name not in known:
        raise UnknownDevice(f"unknown driver {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def detect(sys_object_id: str, sys_descr: str, where: str = "") -> Family:
    """The family for a device's sysObjectID (longest prefix) and sysDescr.

    Raises
    ------
    UnknownDevice
        If no family matches; the message gives sysObjectID and sysDescr and suggests
        ``--driver``.
    """
    oid = _oid(sys_object_id)
    best: tuple[int, int] = (-1, -1)
    chosen: Family | None = None
    for fam in families().values():
        for prefix in fam.sys_object_ids:
            if oid != prefix and not oid.startswith(prefix + "."):
                continue
            if fam.sys_descr is not None and not fam.sys_descr.search(sys_descr):
                continue
            rank = (len(prefix.split(".")), int(fam.sys_descr is not None))
            if rank > best:
                best, chosen = rank, fam
    if chosen is None:
        prefix = f"{where}: " if where else ""
        raise UnknownDevice(
            f"{prefix}no driver for sysObjectID {oid} ({sys_descr[:60]!r}); "
            f"name one with --driver ({', '.join(sorted(families()))})"
        )
    return chosen
