"""Outlet switching as data: the ``switch`` entries of ``profiles.yaml``, and decoding a state.

A family's ``switch`` is a list of candidates (e.g. a vendor's current and legacy tables); the
first whose state column the device answers is used, for reading and for switching. Each has:

- ``state``: the column giving an outlet's present state: ``oid``; ``on_values`` and
  ``off_values``, the raw values that mean on / off (one or a list; any other value, e.g. a
  transition such as Sentry's ``onWait``, reads as ``None``); optionally ``suffix`` (Raritan
  PDU2: keep the rows whose index ends with this sensor type and drop it) and ``invalid`` (raw
  values meaning the outlet cannot switch at all, e.g. APC Easy PDU's notSupported ``-1``).
- ``set_on``, ``set_off`` and optionally ``set_reboot``: what to SET. One ``{oid, value}`` (a
  column; the outlet's index is appended) or a list of them, set in that order as separate
  requests (Schleifenbauer must unlock an outlet before it switches). Without ``set_reboot`` a
  reboot is off, confirmed, then on.

A family without such objects has ``no_switch: why`` instead. (The keys are not ``on`` /
``off``: YAML 1.1 reads those as booleans.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from eams.meter.errors import UnknownDevice
from eams.meter.snmp.client import Value
from eams.meter.snmp.profile import Index, rows_of

ACTIONS = ("on", "off", "reboot")
"""What an operator can ask of an outlet."""


def _ints(raw: Any, where: str) -> tuple[int, ...]:
    items = raw if isinstance(raw, list) else [raw]
    if not items or not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise UnknownDevice(f"profiles.yaml: {where}: expected an integer or a list of them")
    return tuple(items)


def _keys(item: Any, allowed: set[str], required: set[str], where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise UnknownDevice(f"profiles.yaml: {where}: expected a mapping")
    unknown, missing = set(item) - allowed, required - set(item)
    if unknown or missing:
        raise UnknownDevice(
            f"profiles.yaml: {where}: unknown key(s) {sorted(unknown)}, missing {sorted(missing)}"
        )
    return item


@dataclass(frozen=True)
class StateSpec:
    """The column that reads outlet state, and what its raw values mean."""

    oid: str
    on: tuple[int, ...]
    off: tuple[int, ...]
    suffix: int | None = None
    invalid: tuple[int, ...] = ()

    @classmethod
    def parse(cls, raw: Any, where: str) -> StateSpec:
        """From YAML; raises UnknownDevice naming ``where`` if malformed."""
        values = {"oid", "on_values", "off_values"}
        item = _keys(raw, {*values, "suffix", "invalid"}, values, where)
        return cls(
            oid=str(item["oid"]).lstrip("."),
            on=_ints(item["on_values"], f"{where}.on_values"),
            off=_ints(item["off_values"], f"{where}.off_values"),
            suffix=item.get("suffix"),
            invalid=_ints(item["invalid"], f"{where}.invalid") if "invalid" in item else (),
        )

    def rows(self, walked: dict[str, list[tuple[str, Value]]]) -> dict[Index, tuple[str, Value]]:
        """Index (the outlet's, sensor suffix dropped) → (OID, raw value) from a walk."""
        found = {}
        for index, (oid, raw) in rows_of(walked, self.oid).items():
            if self.suffix is not None:
                if not index or index[-1] != self.suffix:
                    continue
                index = index[:-1]
            found[index] = (oid, raw)
        return found

    def decode(self, raw: Value) -> str | None:
        """``"on"``, ``"off"``, or ``None`` for any other value (transitions, unknown)."""
        if raw in self.on:
            return "on"
        if raw in self.off:
            return "off"
        return None

    def oid_at(self, index: Index) -> str:
        """The state OID of the outlet with this index (suffix appended back)."""
        tail = (*index, self.suffix) if self.suffix is not None else index
        return ".".join([self.oid, *map(str, tail)])


@dataclass(frozen=True)
class SetStep:
    """One SET: ``value`` (an INTEGER) into column ``oid`` at the outlet's index."""

    oid: str
    value: int

    def at(self, index: Index) -> tuple[str, int]:
        """(OID, value) for the outlet with this index."""
        return ".".join([self.oid, *map(str, index)]), self.value


@dataclass(frozen=True)
class SwitchSpec:
    """One candidate table: the state column and the SETs of each action."""

    state: StateSpec
    actions: dict[str, tuple[SetStep, ...]]

    @classmethod
    def parse(cls, raw: Any, where: str) -> tuple[SwitchSpec, ...]:
        """The candidates of a family's ``switch`` key; raises UnknownDevice if malformed."""
        items = raw if isinstance(raw, list) else [raw]
        specs = []
        for n, item in enumerate(items):
            here = f"{where}[{n}]"
            keys = {f"set_{a}" for a in ACTIONS}
            item = _keys(item, {"state", *keys}, {"state", "set_on", "set_off"}, here)
            actions = {}
            for action in ACTIONS:
                key = f"set_{action}"
                if key in item:
                    steps = item[key] if isinstance(item[key], list) else [item[key]]
                    checked = [_keys(s, {"oid", "value"}, {"oid", "value"}, here) for s in steps]
                    actions[action] = tuple(
                        SetStep(str(s["oid"]).lstrip("."), _ints(s["value"], f"{here}.{key}")[0])
                        for s in checked
                    )
            specs.append(cls(StateSpec.parse(item["state"], f"{here}.state"), actions))
        return tuple(specs)

    def sets(self, action: str, index: Index) -> list[tuple[str, int]]:
        """The (OID, value) SETs of ``action`` for the outlet at ``index`` (empty if absent)."""
        return [step.at(index) for step in self.actions.get(action, ())]


def read_states(
    specs: Sequence[SwitchSpec], walked: dict[str, list[tuple[str, Value]]], problems: list[str]
) -> tuple[SwitchSpec | None, dict[Index, tuple[str | None, str]]]:
    """The state of every outlet from the first candidate the device answers.

    Returns
    -------
    (SwitchSpec or None, dict)
        The candidate used, and index → (state or ``None``, OID). Rows whose raw value is in
        ``invalid`` (the outlet cannot switch) or is not an integer are left out; the latter
        are recorded in ``problems``.
    """
    for spec in specs:
        states: dict[Index, tuple[str | None, str]] = {}
        local: list[str] = []
        for index, (oid, raw) in spec.state.rows(walked).items():
            if raw is None or isinstance(raw, bool) or not isinstance(raw, int):
                local.append(f"{oid}: outlet state {raw!r} is not an integer")
            elif raw not in spec.state.invalid:
                states[index] = (spec.state.decode(raw), oid)
        if states:
            problems.extend(local)
            return spec, states
    return None, {}
