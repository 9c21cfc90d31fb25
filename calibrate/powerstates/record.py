"""What a power-state calibration stores: the ``power_states`` of a calibration file (schema 2).

Each measured quantity is an :class:`Estimate` over ≥ 3 repeats: the mean, the spread between
repeats and a 95 % interval that also holds the instrument's resolution (a 1 W meter reading
a steady 1.4 W says 1 every time, which no spread reveals). Pydantic v2 models only, no scipy
and no I/O, so loading a calibration file stays light.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, Field, field_validator, model_validator

from eams.actuators.methods import METHODS, known_method, suspends
from eams.calibrate.fitresult import StrictModel

MIN_REPEATS = 3
"""A power-state calibration repeats every transition at least this often (issue 13)."""


_Finite = Annotated[float, Field(allow_inf_nan=False)]


class Estimate(StrictModel):
    """One measured quantity over repeats; its unit is the one of the field that holds it.

    Attributes
    ----------
    value : float
        Mean over the repeats.
    ci95 : (float, float)
        95 % interval of the value: Student's t over the repeats' spread plus ``resolution``.
    spread : float
        Sample standard deviation of the repeats (0 with identical repeats).
    resolution : float
        Half-width the instrument adds whatever the repeats say (meter rounding, the time
        between two polls), in the value's unit.
    repeats : list of float
        Each repeat's value, in order.
    """

    value: _Finite
    ci95: tuple[_Finite, _Finite]
    spread: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    resolution: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    repeats: Annotated[list[_Finite], Field(min_length=MIN_REPEATS)]

    @model_validator(mode="after")
    def _interval_holds_value(self) -> Estimate:
        lo, hi = self.ci95
        if not lo <= self.value <= hi:
            raise ValueError(f"ci95 [{lo}, {hi}] does not hold the value {self.value}")
        return self


class TransitionCost(StrictModel):
    """Time and energy of one kind of transition, from the command to its end.

    Attributes
    ----------
    time_s : Estimate
        Command (magic packet, SSH ``systemctl``, outlet on) → the end (s): the node's agent
        answers again for a wake or a boot; the power settles at the sleep level for a suspend
        or a shutdown.
    energy_j : Estimate
        Energy the outlet metered over that time (J).
    kubernetes_ready_s : Estimate or None
        Command → the Node's Ready condition True again (s), where the API was reachable.
    """

    time_s: Estimate
    energy_j: Estimate
    kubernetes_ready_s: Estimate | None = None


class PowerStates(StrictModel):
    """A node's measured power states (the ``power_states`` of a schema-2 calibration file).

    Attributes
    ----------
    measured_at : datetime (UTC)
    method : str
        The node's method when measured (a name of :data:`eams.actuators.methods.METHODS`).
    meter : str
        The meter URL read, redacted.
    outlet : int
    repeats : int
        Repeats run (≥ 3), retaken ones included: each estimate's ``repeats`` lists the ones
        it is over (a stalled repeat left out; ``notes`` says which).
    p_off_w : Estimate or None
        Soft-off draw with the outlet on (W): PDUs meter the standby power.
    p_suspend_w : Estimate or None
        Suspend-to-RAM draw (W); ``None`` for a node that cannot suspend.
    suspend, wake : TransitionCost or None
        Running → suspended; suspended → running (the agent reports again).
    shutdown : TransitionCost or None
        Running → soft-off (``systemctl poweroff``).
    boot : TransitionCost or None
        Off → running: outlet on after outlet off (``boot_from="outlet"``) or a magic packet
        in soft-off (``"soft_off"``).
    boot_from : {"outlet", "soft_off"} or None
    below_floor : bool
        Some power readings were under the meter's stated floor (the driver flagged them):
        their accuracy is not the meter's stated one.
    notes : list of str
        Why a value is missing, and anything else an operator should know.
    """

    measured_at: AwareDatetime
    method: str
    meter: str
    outlet: Annotated[int, Field(ge=1)]
    repeats: Annotated[int, Field(ge=MIN_REPEATS)]
    p_off_w: Estimate | None = None
    p_suspend_w: Estimate | None = None
    suspend: TransitionCost | None = None
    wake: TransitionCost | None = None
    shutdown: TransitionCost | None = None
    boot: TransitionCost | None = None
    boot_from: Literal["outlet", "soft_off"] | None = None
    below_floor: bool = False
    notes: list[str] = Field(default_factory=list)

    _known_method = field_validator("method")(known_method)

    @property
    def sleep_power_w(self) -> float | None:
        """What the node draws asleep by its method (W): P_suspend (wol), P_off (ssh: soft-off)
        or 0 (outlet: switched off); ``None`` when not measured."""
        if METHODS[self.method].sleep_state == "off":
            return 0.0
        found = self.p_suspend_w if suspends(self.method) else self.p_off_w
        return None if found is None else found.value

    @property
    def wake_energy_j(self) -> float | None:
        """E_wake: the energy of waking the node from its sleep state to its agent reporting
        (J): the wake from suspend (wol), else the boot; ``None`` when not measured."""
        cost = self.wake if suspends(self.method) else self.boot
        return None if cost is None else cost.energy_j.value

    @property
    def wake_time_s(self) -> float | None:
        """Time from the wake command to the agent reporting (s), by method as
        :attr:`wake_energy_j`; ``None`` when not measured."""
        cost = self.wake if suspends(self.method) else self.boot
        return None if cost is None else cost.time_s.value
