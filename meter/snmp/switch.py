"""Switch one outlet of a switched PDU over SNMP, confirmed by reading its state back.

1. Detect the family; one without switching objects (``no_switch`` in ``profiles.yaml``) fails
   at once with :class:`~eams.meter.errors.SwitchUnsupported`.
2. Read the PDU once: the outlet numbers, each outlet's state and the table it came from are
   exactly those ``eams meter read`` shows.
3. Plan: the outlet's index in the switch table the device answered gives the (OID, value)
   SETs of the action, and the state OID to read back.
4. Unless it is a dry run: send the SETs in order, then GET the state every ``poll_s`` until it
   reads what was asked (a reboot must read ``off``, then ``on``) or ``wait_s`` passes, which
   is :class:`~eams.meter.errors.ReadBackDiffers`, never a success.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from eams.meter.base import Meter
from eams.meter.errors import ReadBackDiffers, SwitchUnsupported, UnknownOutlet
from eams.meter.snmp.meter import SnmpMeter
from eams.meter.snmp.switchspec import ACTIONS, StateSpec, SwitchSpec

DEFAULT_WAIT_S = 30.0
"""How long each phase may take to read back (s): an APC reboot holds the outlet off 5–60 s
(rPDU2OutletSwitchedConfigRebootDuration), a Raritan PX 10 s by default."""
DEFAULT_POLL_S = 0.25
"""Seconds between state reads while waiting."""


@dataclass(frozen=True)
class SwitchPhase:
    """SETs sent together, then the states that must be read back, in order."""

    sets: tuple[tuple[str, int], ...]
    expect: tuple[str, ...]


@dataclass(frozen=True)
class SwitchPlan:
    """What switching one outlet sends and reads back (also what a dry run prints).

    Attributes
    ----------
    meter : str
        The PDU's URL without secrets.
    driver : str
        The family.
    outlet : int
        1-based outlet number, as ``eams meter read`` numbers it.
    name : str or None
        The outlet's label.
    action : {"on", "off", "reboot"}
    state_oid : str
        The OID read back.
    state_before : {"on", "off"} or None
        The state when planned.
    phases : tuple of SwitchPhase
        One phase, or two (off, then on) for a reboot on a PDU without a reboot command.
    """

    meter: str
    driver: str
    outlet: int
    name: str | None
    action: str
    state_oid: str
    state_before: str | None
    phases: tuple[SwitchPhase, ...]

    def describe(self) -> list[str]:
        """Lines saying what would be set and read back."""
        label = f' "{self.name}"' if self.name else ""
        lines = [
            f"{self.meter} ({self.driver}) outlet {self.outlet}{label} reads "
            f"{self.state_before or 'neither on nor off'}; {self.action} would"
        ]
        for phase in self.phases:
            lines += [f"  SET {oid} = {value}" for oid, value in phase.sets]
            expect = " then ".join(phase.expect)
            lines.append(f"  then read {self.state_oid} until it reads {expect}")
        return lines


@dataclass(frozen=True)
class SwitchResult:
    """The outcome of :func:`switch_outlet`.

    Attributes
    ----------
    plan : SwitchPlan
    sent : bool
        False for a dry run (nothing was set).
    state : {"on", "off"} or None
        The state read back last (before, for a dry run).
    elapsed_s : float
        From the first SET to the confirming read (0 for a dry run).
    set_s : (float, float) or None
        Monotonic window from before the last phase's first SET was sent to after its last
        SET was answered: the agent switched the relay within it, not during the plan's read
        or the read-back (the instant a power-state measurement starts from). ``None`` for a
        dry run.
    """

    plan: SwitchPlan
    sent: bool
    state: str | None
    elapsed_s: float
    set_s: tuple[float, float] | None = None


def _phases(spec: SwitchSpec, action: str, index: tuple[int, ...]) -> tuple[SwitchPhase, ...]:
    if action == "reboot" and spec.actions.get("reboot"):
        return (SwitchPhase(tuple(spec.sets("reboot", index)), ("off", "on")),)
    if action == "reboot":  # no reboot command: off, confirmed, then on
        return (
            SwitchPhase(tuple(spec.sets("off", index)), ("off",)),
            SwitchPhase(tuple(spec.sets("on", index)), ("on",)),
        )
    return (SwitchPhase(tuple(spec.sets(action, index)), (action,)),)


async def _plan(meter: SnmpMeter, outlet: int, action: str) -> tuple[SwitchPlan, StateSpec]:
    """Read the PDU and work out the SETs that switch ``outlet`` (nothing is set)."""
    fam = await meter.detect()
    where = f"{meter.url.redacted()} ({fam.name})"
    if not fam.switch:
        raise SwitchUnsupported(f"{where}: {fam.title} cannot switch outlets: {fam.no_switch}")
    reading = await meter.read()
    decoded = meter.last_decoded
    assert decoded is not None  # read() sets it
    row = reading.outlet(outlet)
    if row is None:
        have = ", ".join(str(o.outlet) for o in reading.outlets) or "none"
        raise UnknownOutlet(f"{where}: no outlet {outlet}; this PDU has outlets: {have}")
    index = decoded.switch_rows.get(outlet)
    if index is None or decoded.switch_candidate is None:
        tried = ", ".join(spec.state.oid for spec in fam.switch)
        raise SwitchUnsupported(
            f"{where}: outlet {outlet} publishes no switch state (tried {tried}): "
            "this model or outlet is metered only and cannot be switched"
        )
    spec = fam.switch[decoded.switch_candidate]
    plan = SwitchPlan(
        meter=meter.url.redacted(),
        driver=fam.name,
        outlet=outlet,
        name=row.name,
        action=action,
        state_oid=spec.state.oid_at(index),
        state_before=row.state,
        phases=_phases(spec, action, index),
    )
    return plan, spec.state


async def _read_back(
    meter: SnmpMeter,
    spec: StateSpec,
    plan: SwitchPlan,
    phase: SwitchPhase,
    wait_s: float,
    poll_s: float,
) -> str | None:
    """Poll the state until ``phase.expect`` has been read in order; the last state read."""
    deadline = time.monotonic() + wait_s
    pending = list(phase.expect)
    seen: list[str] = []
    while True:
        raw = (await meter.client.get([plan.state_oid])).get(plan.state_oid)
        state = spec.decode(raw) if isinstance(raw, int) else None
        seen.append(state or f"{raw!r}")
        if state == pending[0]:
            pending.pop(0)
            if not pending:
                return state
        if time.monotonic() >= deadline:
            raise ReadBackDiffers(
                f"{plan.meter} outlet {plan.outlet}: asked {plan.action}, but {plan.state_oid} "
                f"did not read {' then '.join(phase.expect)} within {wait_s:g} s "
                f"(read: {', '.join(dict.fromkeys(seen))})"
            )
        await asyncio.sleep(poll_s)


async def switch_outlet(
    meter: Meter,
    outlet: int,
    action: str,
    *,
    wait_s: float = DEFAULT_WAIT_S,
    poll_s: float = DEFAULT_POLL_S,
    dry_run: bool = False,
) -> SwitchResult:
    """Switch ``outlet`` on, off or reboot it, and confirm by reading its state back.

    Parameters
    ----------
    meter : Meter
        An SNMP meter (``open_meter`` on ``snmp://WRITE_COMMUNITY@HOST`` or ``snmpv3://``);
        the credentials must allow SET.
    outlet : int
        1-based outlet number, as ``eams meter read`` numbers it.
    action : {"on", "off", "reboot"}
    wait_s : float
        Bound on each phase's read-back (s, > 0).
    poll_s : float
        Seconds between state reads (> 0).
    dry_run : bool
        Read and plan only; nothing is set.

    Returns
    -------
    SwitchResult

    Raises
    ------
    SwitchUnsupported
        A serial meter, a family without switching, or an outlet without switch state.
    UnknownOutlet
        No such outlet.
    WriteRefused
        The agent refused a SET (read-only community or user: noAccess / notWritable).
    ReadBackDiffers
        The state did not read as asked within ``wait_s``.
    ValueError
        An action other than on, off, reboot, or a wait or poll interval that is not > 0.
    MeterTimeout, MeterAuthError, MeterUnreachable, MeterProtocolError, UnknownDevice
    """
    if action not in ACTIONS:
        raise ValueError(f"action {action!r} is not one of {', '.join(ACTIONS)}")
    if not (wait_s > 0 and poll_s > 0):
        raise ValueError(f"wait_s and poll_s must be > 0 (got {wait_s}, {poll_s})")
    if not isinstance(meter, SnmpMeter):
        where = meter.url.redacted()
        raise SwitchUnsupported(f"{where}: a serial meter measures; it cannot switch")
    plan, spec = await _plan(meter, outlet, action)
    if dry_run:
        return SwitchResult(plan, sent=False, state=plan.state_before, elapsed_s=0.0)
    started = time.monotonic()
    state: str | None = plan.state_before
    set_s = None
    for phase in plan.phases:
        set_from = time.monotonic()
        for oid, value in phase.sets:
            await meter.client.set(oid, value)
        set_s = (set_from, time.monotonic())
        state = await _read_back(meter, spec, plan, phase, wait_s, poll_s)
    return SwitchResult(
        plan, sent=True, state=state, elapsed_s=time.monotonic() - started, set_s=set_s
    )
