"""The raw sweep a calibration is fitted from (issue 3, DESIGN.md §3): where and how it ran and
every meter sample of every level, as :mod:`eams.calibrate.calfile` stores it under ``sweep``
(and ``eams calibrate sweep`` keeps a stopped sweep as ``NAME.partial.json``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AwareDatetime,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from eams import __version__
from eams.calibrate.fitresult import Fraction, StrictModel, Watts
from eams.meter.errors import BadMeterUrl
from eams.meter.url import parse_meter_url


def redact_meter_url(value: str) -> str:
    """A meter URL with its secrets (community, v3 keys) left out; a malformed one refused
    (``ValueError``, for a pydantic validator)."""
    try:
        return parse_meter_url(value).redacted()
    except BadMeterUrl as exc:
        raise ValueError(str(exc)) from None


class PowerSample(StrictModel):
    """One meter reading of the node's outlet: ``read_at`` (UTC) and ``power_w`` (``None``
    when the meter gave no value); ``below_floor`` when under the meter's metering floor."""

    read_at: AwareDatetime
    power_w: Watts | None
    below_floor: bool = False


class SweepLevel(StrictModel):
    """One load level of a sweep.

    Attributes
    ----------
    commanded_pct : int
        The stress-ng ``--cpu-load`` target (0 = active idle: no stress-ng running).
    utilisation : float or None
        Utilisation of the whole node measured from ``/proc/stat`` over the measurement
        interval (fraction); ``None`` if unknown.
    started_at : datetime
        When the load was started (UTC).
    settle_s : float
        Time waited for power and utilisation to settle before measuring (s).
    settled : bool
        False when the settle limit ran out before the readings were steady.
    measure_s : float
        Length of the measurement interval (s).
    samples : list of PowerSample
        Every meter reading taken in the measurement interval.
    bogo_ops_per_s : float or None
        stress-ng's total bogo-ops per second (real time) at this level; ``None`` at idle.
    attempts : int
        How many times the level was run (a meter dropout repeats it).
    """

    commanded_pct: Annotated[int, Field(ge=0, le=100)]
    utilisation: Fraction | None
    started_at: AwareDatetime
    settle_s: Annotated[float, Field(ge=0)]
    settled: bool
    measure_s: Annotated[float, Field(ge=0)]
    samples: list[PowerSample]
    bogo_ops_per_s: Annotated[float, Field(ge=0)] | None = None
    attempts: Annotated[int, Field(ge=1)] = 1

    @property
    def mean_power_w(self) -> float | None:
        """Mean of the samples that have a value (W); ``None`` when none has."""
        values = [s.power_w for s in self.samples if s.power_w is not None]
        return sum(values) / len(values) if values else None


class Contention(StrictModel):
    """Other work competing with a sweep's load (``eams.calibrate.contention``): the figures,
    ``None`` where not measured, and one sentence per sign beyond its limit in ``findings``
    (a file with findings was written with ``--allow-contention``: its speed is suspect)."""

    idle_utilisation: Fraction | None = None
    full_load_cpu_share: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    steal_max: Fraction | None = None
    findings: list[str] = Field(default_factory=list)


class SweepRecord(StrictModel):
    """The raw sweep: where and how it ran, and every level measured (in order).

    ``complete`` is False for a sweep that stopped early (``stop_reason`` says why); such a
    record is what ``eams calibrate sweep`` keeps as ``NAME.partial.json``.
    """

    node: Annotated[str, Field(min_length=1)]
    target: str
    meter: str
    outlet: Annotated[int, Field(ge=1)]
    floor_w: Watts | None = None
    online_cpus: Annotated[int, Field(ge=1)]
    stress_ng_version: str
    eams_version: str = __version__
    started_at: AwareDatetime
    finished_at: AwareDatetime | None = None
    complete: bool = False
    stop_reason: str | None = None
    levels: list[SweepLevel] = Field(default_factory=list)
    contention: Contention | None = None

    _redact_meter = field_validator("meter")(redact_meter_url)

    @model_serializer(mode="wrap")
    def _omit_absent_contention(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A sweep without contention figures is written exactly as schema 1 wrote it.
        data: dict[str, Any] = handler(self)
        if data.get("contention") is None:
            data.pop("contention", None)
        return data
