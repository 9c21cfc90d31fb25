"""The calibration file: one versioned JSON document per node (issue 3, DESIGN.md §3).

It holds the fitted line and its uncertainty, the measured active idle, the node's speed and
its reference, the raw sweep it was fitted from (every meter sample with its timestamp), the
meter URL with no secret in it, and the stress-ng and eams versions. The schema is the pydantic
models below, whose ``fit`` is :class:`~eams.calibrate.fitresult.FitSummary`; ``schema_version``
is 1. A file of a newer schema is refused, never half-read.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from eams import __version__
from eams.calibrate.errors import CalibrationFileError, FitError
from eams.calibrate.fitresult import FitResult, FitSummary, StrictModel
from eams.calibrate.model import PowerCurve, wake_power
from eams.calibrate.powerstates.record import PowerStates
from eams.calibrate.sweeprecord import SweepLevel, SweepRecord, redact_meter_url
from eams.validation import describe_validation_error

SCHEMA_VERSION: Final = 2
"""The newest schema this eams reads and writes (2: ``power_states``)."""
POWER_STATES_SCHEMA: Final = 2
"""The first schema with ``power_states``."""
BUSY_NODE_SPAN = 0.3
"""A sweep whose measured utilisation spans less than this (fraction) was swamped by other work."""
ACTIVE_IDLE_MAX_UTILISATION = 0.10
"""The idle level counts as active idle only if the node was this quiet (fraction): a node
busy with other work at "idle" gives no active-idle power, and the line's intercept is used."""


class SpeedReference(StrictModel):
    """How ``speed`` was obtained: this node's stress-ng bogo-ops/s at 100 % load over the
    reference's. ``reference`` names it (``"self"``: the node is its own reference)."""

    bogo_ops_per_s: Annotated[float, Field(gt=0)]
    reference: str
    reference_bogo_ops_per_s: Annotated[float, Field(gt=0)]


INTERCEPT_FAR = 0.10
"""How far (a fraction of the measured active idle) the line's intercept may sit from it before
:meth:`Calibration.intercept_note` says why."""


class Calibration(StrictModel):
    """One node's calibration (the ``calibration/NAME.json`` file).

    Attributes
    ----------
    schema_version : 1 or 2
        2 when ``power_states`` is present (a schema-1 file with them is refused).
    node : str
    created_at : datetime (UTC)
    meter : str
        Meter URL, redacted (:meth:`eams.meter.url.MeterUrl.redacted`): no community or key.
    outlet : int
    fit : FitSummary
        The line and its 95 % intervals, R², RMSE, per-level error and the linearity verdict.
    p_active_idle_w : float or None
        Power measured at active idle (no load started, measured utilisation at most
        :data:`ACTIVE_IDLE_MAX_UTILISATION`), W: beside the line's intercept.
    speed : float or None
        s_n: bogo-ops/s at full load relative to the reference (study §5.1); ``None`` unknown.
    speed_reference : SpeedReference or None
    sweep : SweepRecord or None
        The raw sweep; ``None`` for a calibration made from other data.
    eams_version : str
    power_states : PowerStates or None
        P_off, P_suspend and the time and energy of each transition (schema 2; ``eams
        calibrate power-states``); ``None`` until measured, and left out of the file then.
    """

    schema_version: Literal[1, 2] = 1
    node: Annotated[str, Field(min_length=1)]
    created_at: AwareDatetime
    meter: str
    outlet: Annotated[int, Field(ge=1)]
    fit: FitSummary
    p_active_idle_w: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None
    speed: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None
    speed_reference: SpeedReference | None = None
    sweep: SweepRecord | None = None
    eams_version: str = __version__
    power_states: PowerStates | None = None

    _redact_meter = field_validator("meter")(redact_meter_url)

    @model_validator(mode="after")
    def _schema_matches_fields(self) -> Calibration:
        if self.power_states is not None and self.schema_version < POWER_STATES_SCHEMA:
            raise ValueError(
                f"power_states needs schema_version {POWER_STATES_SCHEMA}, not "
                f"{self.schema_version}"
            )
        return self

    @model_serializer(mode="wrap")
    def _leave_out_absent_power_states(
        self, handler: SerializerFunctionWrapHandler
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("power_states") is None:
            data.pop("power_states", None)
        return data

    def with_power_states(self, power_states: PowerStates) -> Calibration:
        """This calibration with ``power_states`` set (schema 2), everything else kept."""
        data = {**dict(self), "schema_version": POWER_STATES_SCHEMA, "power_states": power_states}
        return Calibration.model_validate(data)

    @property
    def sleep_power_w(self) -> float | None:
        """The node's draw in its sleep state (W; :attr:`PowerStates.sleep_power_w`), for the
        energy model's wake term; ``None`` when not measured."""
        return None if self.power_states is None else self.power_states.sleep_power_w

    @property
    def wake_energy_j(self) -> float | None:
        """E_wake, the one-off energy of waking the node (J; :attr:`PowerStates.wake_energy_j`);
        ``None`` when not measured."""
        return None if self.power_states is None else self.power_states.wake_energy_j

    @property
    def p_idle_w(self) -> float:
        """The line's intercept P_idle (W)."""
        return self.fit.p_idle_w

    @property
    def p_max_w(self) -> float:
        """The line at full load P_max (W)."""
        return self.fit.p_max_w

    @property
    def p_idle_ci95_w(self) -> tuple[float, float] | None:
        """95 % interval of P_idle (W); ``None`` when unknown."""
        return self.fit.p_idle_ci95_w

    @property
    def p_max_ci95_w(self) -> tuple[float, float] | None:
        """95 % interval of P_max (W); ``None`` when unknown."""
        return self.fit.p_max_ci95_w

    @property
    def r2(self) -> float:
        """R² of the line."""
        return self.fit.r2

    @property
    def rmse_w(self) -> float:
        """RMSE of the line (W)."""
        return self.fit.rmse_w

    def intercept_note(self, far: float = INTERCEPT_FAR) -> str | None:
        """A sentence when the line's intercept ``p_idle_w`` is far from the measured active
        idle (more than ``far`` of it): why the printed P_idle is not the node's idle draw, with
        the fit's own verdict (``fit.linear_reason``, as ``eams calibrate`` prints it);
        ``None`` when they agree or no active idle was measured."""
        idle = self.p_active_idle_w
        if idle is None or abs(self.p_idle_w - idle) <= far * idle:
            return None
        stepped = self._idle_step() is not None
        used = (
            "the model steps down to the measured active idle below the lowest loaded level"
            if stepped
            else "the model uses the line down to 0 % load (no significant idle step was found)"
        )
        return (
            f"{self.node}: P_idle {self.p_idle_w:.1f} W is where the straight line fitted "
            f"through the loaded levels meets 0 % load, not what the node draws idle (measured "
            f"active idle {idle:.1f} W): a power curve that is not straight, or steps at idle, "
            f"puts the intercept away from it; {used}. The fit: {self.fit.linear_reason}"
        )

    @property
    def linear_ok(self) -> bool:
        """False when a straight line is the wrong model (``fit.linear_reason`` says why)."""
        return self.fit.linear_ok

    @property
    def wake_power_w(self) -> float:
        """Idle power to charge for waking an empty node (W), study §5.1's wake term.

        The measured active idle when there is one, else the line's intercept: see
        :func:`eams.calibrate.model.wake_power` for why.
        """
        return wake_power(self.p_active_idle_w, self.fit.p_idle_w)[0]

    @property
    def wake_power_note(self) -> str:
        """One sentence saying which idle power applies for waking an empty node."""
        return wake_power(self.p_active_idle_w, self.fit.p_idle_w)[1]

    def model(self) -> PowerCurve:
        """The calibrated power curve (:class:`~eams.calibrate.model.PowerCurve`): the line,
        stepping to the measured active idle below the lowest loaded level where the sweep's
        idle-step test found a step (:mod:`eams.calibrate.idlestep`).

        The step is read from what the file already keeps, so no schema change: the fit gives
        the active-idle level weight 0 exactly when it stepped off the line (idle points are
        never rejected as outliers, :mod:`eams.calibrate.robust`), and ``linear_ok`` is false;
        u1 is the measured utilisation of the sweep's lowest loaded level. A calibration
        without its sweep (made from other data) cannot tell its idle level from the others,
        so its model is the line.

        Raises
        ------
        ModelError
            If the fitted line is impossible (P_idle < 0 or P_max < P_idle), or the active
            idle is above P_max.
        """
        step = self._idle_step()
        if step is None:
            return PowerCurve(self.fit.model())
        return PowerCurve(self.fit.model(), p_active_idle_w=step[0], u_step=step[1])

    def _idle_step(self) -> tuple[float, float] | None:
        """(A, u1) when the fit found an idle step (see :meth:`model`), else ``None``."""
        if self.fit.linear_ok or self.p_active_idle_w is None or self.sweep is None:
            return None
        measured = [(lv, u) for lv in self.sweep.levels if (u := lv.utilisation) is not None]
        idle = [u for lv, u in measured if _active_idle(lv)]
        loaded = [u for lv, u in measured if not _active_idle(lv)]
        weights = [
            lv.weight
            for lv in self.fit.levels
            if any(math.isclose(lv.utilisation, u, abs_tol=1e-12) for u in idle)
        ]
        if not (weights and loaded) or any(w > 0 for w in weights):
            return None
        return self.p_active_idle_w, min(loaded)

    @property
    def p_active_idle_sd_w(self) -> float | None:
        """Standard uncertainty of ``p_active_idle_w`` (W): the sampling σ of its level's mean,
        sd(samples)/√n, no smaller than the meter's resolution/√12 per sample (quantised
        readings that never changed); ``None`` without the sweep's idle samples.

        Consecutive meter readings are correlated, so this may understate; it enters VT-5
        only where the curve steps (the line's own σ come from its 95 % intervals).
        """
        if self.p_active_idle_w is None or self.sweep is None:
            return None
        idle = [lv for lv in self.sweep.levels if _active_idle(lv)]
        values = [s.power_w for s in idle[-1].samples if s.power_w is not None] if idle else []
        if len(values) < 2:
            return None
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
        floor = (reading_resolution_w(self.sweep) or 0.0) / math.sqrt(12)
        return max(sd, floor) / math.sqrt(len(values))


def fit_sweep(record: SweepRecord) -> FitResult:
    """Fit the line to a sweep: one point per level (measured utilisation, mean power).

    Level means, not single samples, are the points: the samples of a level share one
    utilisation measurement, so its error is common to them and only the level-to-level
    scatter tells how well the line is known. The meter's resolution
    (:func:`reading_resolution_w`) bounds that scatter from below.

    Raises
    ------
    FitError
        If a level's power is at or below the meter floor (naming the outlet), or fewer than
        3 levels have both a utilisation and a power, or the measured utilisation spans less
        than :data:`BUSY_NODE_SPAN` or several loads measured the same utilisation (the node
        was busy with other work: the line would be an extrapolation from a cluster of points,
        or levels saturated at 100 % merged).
    """
    usable = [
        lv for lv in record.levels if lv.utilisation is not None and lv.mean_power_w is not None
    ]
    from eams.calibrate.fit import MIN_LEVELS, fit_linear  # scipy: only when fitting

    utilisation = [lv.utilisation for lv in usable if lv.utilisation is not None]
    commanded = {lv.commanded_pct for lv in usable}
    merged = len(set(utilisation)) < MIN_LEVELS <= len(commanded)
    if len(utilisation) >= 2 and (max(utilisation) - min(utilisation) < BUSY_NODE_SPAN or merged):
        raise FitError(
            f"node {record.node}: the measured utilisation only spanned "
            f"{min(utilisation):.2f}–{max(utilisation):.2f} over the levels"
            + (f", {len(commanded)} loads measuring as {len(set(utilisation))}" if merged else "")
            + ": other work kept the node busy, so the load levels could not be told apart; "
            "stop it and sweep again"
        )

    return fit_linear(
        utilisation,
        [lv.mean_power_w for lv in usable if lv.mean_power_w is not None],
        floor_w=record.floor_w,
        outlet=record.outlet,
        labels=[f"level {lv.commanded_pct} %" for lv in usable],
        columns=("utilisation", "power_w"),
        resolution_w=reading_resolution_w(record),
        idle=[_active_idle(lv) for lv in usable],
    )


def _active_idle(level: SweepLevel) -> bool:
    """No load started and the node measured idle: the level that ``p_active_idle_w`` is."""
    return (
        level.commanded_pct == 0
        and level.utilisation is not None
        and level.utilisation <= ACTIVE_IDLE_MAX_UTILISATION
    )


def reading_resolution_w(record: SweepRecord) -> float | None:
    """The meter's reading resolution as seen in the sweep: the smallest step between distinct
    sample values (W), e.g. 1.0 for an APC outlet; ``None`` with fewer than two values.

    It can only overstate the true step (a step never seen), which widens the intervals.
    """
    return smallest_step_w(
        s.power_w for lv in record.levels for s in lv.samples if s.power_w is not None
    )


def smallest_step_w(power_w: Iterable[float]) -> float | None:
    """The smallest step between distinct power values (W), the resolution of readings
    quantised to it; ``None`` with fewer than two distinct values."""
    values = sorted(set(power_w))
    steps = [b - a for a, b in pairwise(values) if b - a > 1e-9]
    return min(steps) if steps else None


def calibration_from_sweep(
    record: SweepRecord,
    *,
    created_at: datetime,
    reference: str = "self",
    reference_bogo_ops_per_s: float | None = None,
) -> Calibration:
    """Fit a sweep and build the node's :class:`Calibration`.

    Parameters
    ----------
    record : SweepRecord
    created_at : datetime
        Timezone-aware creation time.
    reference, reference_bogo_ops_per_s :
        The speed reference: its name and its bogo-ops/s at 100 % load. By default the node is
        its own reference (speed 1.0).

    Raises
    ------
    FitError
        As :func:`fit_sweep`.
    """
    result = fit_sweep(record)
    full = [lv for lv in record.levels if lv.commanded_pct == 100 and lv.bogo_ops_per_s]
    speed_ref = None
    if full:
        ops = full[-1].bogo_ops_per_s
        assert ops is not None
        speed_ref = SpeedReference(
            bogo_ops_per_s=ops,
            reference=reference,
            reference_bogo_ops_per_s=reference_bogo_ops_per_s or ops,
        )
    idle = [lv.mean_power_w for lv in record.levels if _active_idle(lv)]
    return Calibration(
        node=record.node,
        created_at=created_at,
        meter=record.meter,
        outlet=record.outlet,
        fit=FitSummary.from_result(result),
        p_active_idle_w=idle[-1] if idle else None,
        speed=speed_ref.bogo_ops_per_s / speed_ref.reference_bogo_ops_per_s if speed_ref else None,
        speed_reference=speed_ref,
        sweep=record,
    )


def load_calibration(path: str | Path, expect_node: str | None = None) -> Calibration:
    """Read and validate a calibration file.

    Parameters
    ----------
    path : str or Path
    expect_node : str, optional
        Refuse a file whose ``node`` is another one.

    Returns
    -------
    Calibration

    Raises
    ------
    CalibrationFileError
        Naming the path and the field: unreadable, not JSON, missing or malformed field, a
        newer ``schema_version`` than this eams reads, or a file of another node.
    """
    path = Path(path)
    try:
        raw: Any = json.loads(path.read_text())
    except OSError as exc:
        raise CalibrationFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CalibrationFileError(f"{path}: not a JSON calibration file: {exc}") from exc
    if not isinstance(raw, dict):
        raise CalibrationFileError(f"{path}: field '(top level)': must be a JSON object")
    version = raw.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise CalibrationFileError(
            f"{path}: field 'schema_version': {version} is newer than this eams "
            f"{__version__} reads ({SCHEMA_VERSION}); upgrade eams"
        )
    try:
        calibration = Calibration.model_validate(raw)
    except ValidationError as exc:
        problems = describe_validation_error(
            exc, template="field '{path}': {message}", dotted_index=True
        )
        raise CalibrationFileError(f"{path}: {problems}") from exc
    if expect_node is not None and calibration.node != expect_node:
        raise CalibrationFileError(
            f"{path}: field 'node': the file is for node {calibration.node!r}, not {expect_node!r}"
        )
    return calibration


def save_calibration(calibration: Calibration, path: str | Path) -> Path:
    """Write a calibration file atomically (a reader never sees half a file).

    Returns
    -------
    Path
        The path written. Parent folders are created.
    """
    return _write_json(calibration, Path(path))


def save_sweep_record(record: SweepRecord, path: str | Path) -> Path:
    """Write a (partial) sweep record atomically, as :func:`save_calibration` does."""
    return _write_json(record, Path(path))


def _write_json(model: BaseModel, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(model.model_dump_json(indent=2) + "\n")
    os.replace(tmp, path)
    return path
