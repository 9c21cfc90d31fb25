"""The telemetry record: one node's age-stamped power sample, its invariants and its wire forms.

Every component meets here: the agent builds samples (:mod:`eams.agent.sampler`) and writes
them (JSONL, InfluxDB, the extender push), the extender ingests them (``POST /telemetry``), the
wall-power check loads them back (JSONL files, InfluxDB rows), the bench harness emits them. So
the record lives in the ground and none of them imports another for it.

InfluxDB line protocol, one point per node per sample period::

    eams_node,node=<name>[,source=metered|modelled] power_w=<float>,utilisation=<float>,
        headroom=<float>,power_cap_w=<float>[,energy_wh=<float>] <measured_at_ns>

=============== ===== ============================================================== =========
name            kind  meaning                                                        unit
=============== ===== ============================================================== =========
eams_node       meas. one point per node per period
node            tag   Kubernetes node name
source          tag   ``metered`` (fresh PDU reading) or ``modelled`` (calibration);  —
                      absent when power is unknown (then ``power_w`` is absent too)
power_w         field active power of the node                                       W
utilisation     field CPU utilisation over the period, from /proc/stat deltas       0–1
headroom        field h = 1 − P/P_cap (:func:`headroom_from_power`); absent when     0–1 (may
                      power is unknown                                               be < 0)
power_cap_w     field the node's power cap P_cap                                    W
energy_wh       field the PDU outlet's cumulative energy counter, where offered      Wh
time            —     when the values were *measured* (not written), epoch, UTC      ns
=============== ===== ============================================================== =========

On the PDU-owner node the agent also publishes a point per other node of its outlet map:
there ``utilisation`` is absent (only that node knows it) and power is ``metered`` or absent.

Timestamps are always written with explicit ``precision=ns``. A missing value is absent from
the point (line protocol has no null) and ``None`` in Python and JSON, never 0. The JSON form
(:meth:`TelemetrySample.to_json`) uses the same names plus ``measured_at_ns``; JSONL files hold
one such object per line and the extender push sends ``{"samples": [...]}`` of them.

Invariants, checked whenever a sample is built — in Python or from JSON — by one validator
(:class:`TelemetrySample` raises :class:`~eams.errors.TelemetryError` naming the key):

- ``node`` is a non-empty string; ``measured_at_ns`` an integer (epoch ns, never a bool);
- ``power_cap_w`` is a finite number > 0;
- ``utilisation`` is missing or finite in [0, 1] (the power model is defined there);
- ``power_w`` and ``energy_wh`` are missing or finite ≥ 0 (a PDU meters consumption only);
- ``headroom`` is missing or finite;
- ``source`` is present exactly when ``power_w`` is, and then ``metered`` or ``modelled``;
- given the reader's clock (``now_ns``), ``measured_at_ns`` is at most :data:`MAX_AHEAD_S`
  ahead of it: a sample from the future would look fresh until its stamp passed and, being the
  newest, hide every real sample of its node until then.
"""

from __future__ import annotations

import math
import sys
from dataclasses import InitVar, dataclass, field
from enum import StrEnum
from typing import Any

from eams.errors import TelemetryError

MEASUREMENT = "eams_node"
TAGS = ("node", "source")
FIELDS = ("power_w", "utilisation", "headroom", "power_cap_w", "energy_wh")
TIMESTAMP_PRECISION = "ns"

MAX_AHEAD_S = 5.0
"""How far a sample may be stamped ahead of its reader's clock, s (clock skew between an agent's
node and the reader's; NTP keeps it far below)."""
_MAX_AHEAD_NS = int(MAX_AHEAD_S * 1e9)
_MAX_FLOAT = sys.float_info.max


class PowerSource(StrEnum):
    """Where a sample's power came from."""

    METERED = "metered"
    MODELLED = "modelled"


_SOURCES = {s.value: s for s in PowerSource}
_OPTIONAL_NUMBERS = ("utilisation", "power_w", "headroom", "energy_wh")


def headroom_from_power(power_w: float | None, power_cap_w: float) -> float | None:
    """Power headroom h = 1 − P/P_cap (DESIGN.md §4; study §5.2).

    Parameters
    ----------
    power_w : float or None
        Active power P (W); ``None`` when unknown.
    power_cap_w : float
        The node's power cap P_cap (W), > 0.

    Returns
    -------
    float or None
        The headroom, a ratio: 1 at 0 W, 0 at the cap, negative beyond it; ``None`` when the
        power is unknown (never 0).
    """
    return None if power_w is None else 1.0 - power_w / power_cap_w


def _escape_tag(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", r"\,").replace("=", r"\=").replace(" ", r"\ ")


@dataclass(frozen=True, slots=True)
class TelemetrySample:
    """One node's sample, stamped with the time it was measured.

    Building one checks every invariant of the module docstring.

    Attributes
    ----------
    node : str
        Kubernetes node name.
    measured_at_ns : int
        When measured, nanoseconds since the Unix epoch (UTC).
    power_cap_w : float
        P_cap (W).
    utilisation : float or None
        CPU utilisation 0–1 over the period.
    power_w : float or None
        Active power (W); ``None`` when neither a fresh reading nor a calibration exists.
    source : PowerSource or None
        ``None`` exactly when ``power_w`` is ``None``.
    headroom : float or None
        :func:`headroom_from_power` of ``power_w``.
    energy_wh : float or None
        Cumulative outlet energy counter (Wh), where the PDU offers one.
    now_ns : int or None, keyword only, not stored
        The reader's clock (epoch ns); when given, a stamp more than :data:`MAX_AHEAD_S` after
        it is refused.

    Raises
    ------
    TelemetryError
        An invariant does not hold; ``key`` names the key at fault (``None``: the pairing of
        ``source`` and ``power_w``).
    """

    node: str
    measured_at_ns: int
    power_cap_w: float
    utilisation: float | None = None
    power_w: float | None = None
    source: PowerSource | None = None
    headroom: float | None = None
    energy_wh: float | None = None
    now_ns: InitVar[int | None] = field(default=None, kw_only=True)

    def __post_init__(self, now_ns: int | None) -> None:
        _validate(self, now_ns)

    def age_s(self, now_ns: int) -> float:
        """Seconds between measurement and ``now_ns`` (epoch ns); negative if from the future."""
        return (now_ns - self.measured_at_ns) / 1e9

    def to_line_protocol(self) -> str:
        """The point as one InfluxDB line (precision ns); missing values are left out."""
        tags = f"node={_escape_tag(self.node)}"
        if self.source is not None:
            tags += f",source={self.source.value}"
        fields = ",".join(
            f"{name}={float(value)!r}"
            for name in FIELDS
            if (value := getattr(self, name)) is not None
        )
        return f"{MEASUREMENT},{tags} {fields} {self.measured_at_ns}"

    def to_json(self) -> dict[str, Any]:
        """The sample as a JSON-ready dict (JSONL sink, extender push); ``None`` for missing."""
        return {
            "node": self.node,
            "measured_at_ns": self.measured_at_ns,
            "power_cap_w": self.power_cap_w,
            "utilisation": self.utilisation,
            "power_w": self.power_w,
            "source": None if self.source is None else self.source.value,
            "headroom": self.headroom,
            "energy_wh": self.energy_wh,
        }

    @classmethod
    def from_json(cls, data: Any, *, now_ns: int | None = None) -> TelemetrySample:
        """Build a sample from its JSON form (:meth:`to_json`; unknown keys are ignored).

        Parameters
        ----------
        data : Any
            A decoded JSON object.
        now_ns : int, optional
            The reader's clock, epoch ns (see the class).

        Raises
        ------
        TelemetryError
            ``data`` is not an object, lacks ``node``, ``measured_at_ns`` or ``power_cap_w``,
            or breaks an invariant; ``key`` names the key at fault.
        """
        if not isinstance(data, dict):
            raise TelemetryError(
                f"telemetry sample: must be an object, got {type(data).__name__}",
                key=None,
                detail=f"must be an object, got {type(data).__name__}",
            )
        try:
            node, stamp, cap = data["node"], data["measured_at_ns"], data["power_cap_w"]
        except KeyError as exc:
            key = exc.args[0]
            raise TelemetryError(
                f"telemetry sample: missing key {key!r}", key=key, detail="missing"
            ) from None
        source = data.get("source")
        if type(source) is str:  # an unknown name stays a str: the validator names it
            source = _SOURCES.get(source, source)
        return cls(
            node,
            stamp,
            cap,
            data.get("utilisation"),
            data.get("power_w"),
            source,
            data.get("headroom"),
            data.get("energy_wh"),
            now_ns=now_ns,
        )


def _finite(value: Any) -> bool:
    """A finite real number: a float (numpy's too) or a non-bool int a float can hold."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return -_MAX_FLOAT <= value <= _MAX_FLOAT
    return False


def _bad(key: str, detail: str) -> TelemetryError:
    return TelemetryError(f"{key} {detail}", key=key, detail=detail)


def _validate(sample: TelemetrySample, now_ns: int | None) -> None:
    """Every invariant of the record (module docstring), in key order; raises the first broken."""
    node = sample.node
    if not isinstance(node, str) or not node:
        raise _bad("node", f"must be a non-empty string, got {node!r}")
    stamp = sample.measured_at_ns
    if not isinstance(stamp, int) or isinstance(stamp, bool):
        raise _bad("measured_at_ns", f"must be an integer (epoch ns), got {stamp!r}")
    if now_ns is not None and stamp > now_ns + _MAX_AHEAD_NS:
        raise _bad(
            "measured_at_ns",
            f"{(stamp - now_ns) / 1e9:.3g} s ahead of the reader's clock "
            f"(at most {MAX_AHEAD_S:g} s; epoch nanoseconds expected)",
        )
    cap = sample.power_cap_w
    if not _finite(cap):
        raise _bad("power_cap_w", f"must be a finite number (W), got {cap!r}")
    if cap <= 0:
        raise _bad("power_cap_w", f"{cap:g} W is not positive")
    for key in _OPTIONAL_NUMBERS:
        value = getattr(sample, key)
        if value is not None and not _finite(value):
            raise _bad(key, f"must be a finite number or null, got {value!r}")
    utilisation, power_w, energy_wh = sample.utilisation, sample.power_w, sample.energy_wh
    if utilisation is not None and not 0 <= utilisation <= 1:
        raise _bad("utilisation", f"{utilisation:g} is outside [0, 1]")
    if power_w is not None and power_w < 0:
        raise _bad("power_w", f"{power_w:g} W is negative")
    if energy_wh is not None and energy_wh < 0:
        raise _bad("energy_wh", f"{energy_wh:g} Wh is negative")
    source = sample.source
    if (source is None) != (power_w is None):
        shown = source.value if isinstance(source, PowerSource) else source
        detail = (
            f"source {shown!r} is given without power_w"
            if power_w is None
            else f"power_w {power_w:g} W is given without source"
        )
        detail += " (source is present exactly when power_w is)"
        raise TelemetryError(f"telemetry sample: {detail}", key=None, detail=detail)
    if source is not None and not isinstance(source, PowerSource):
        raise _bad("source", f"must be 'metered', 'modelled' or null, got {source!r}")
