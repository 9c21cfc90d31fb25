"""The telemetry schema: one definition that the agent writes and everyone else reads.

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
headroom        field h = 1 − P/P_cap; absent when power is unknown                  0–1 (may
                                                                                     be < 0)
power_cap_w     field the node's power cap P_cap                                    W
energy_wh       field the PDU outlet's cumulative energy counter, where offered      Wh
time            —     when the values were *measured* (not written), epoch, UTC      ns
=============== ===== ============================================================== =========

On the PDU-owner node the agent also publishes a point per other node of its outlet map:
there ``utilisation`` is absent (only that node knows it) and power is ``metered`` or absent.

Timestamps are always written with explicit ``precision=ns``. A missing value is absent from
the point (line protocol has no null) and ``None`` in Python and JSONL, never 0. JSONL files
hold one :meth:`TelemetrySample.to_json` object per line.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

MEASUREMENT = "eams_node"
TAGS = ("node", "source")
FIELDS = ("power_w", "utilisation", "headroom", "power_cap_w", "energy_wh")
TIMESTAMP_PRECISION = "ns"


class PowerSource(StrEnum):
    """Where a sample's power came from."""

    METERED = "metered"
    MODELLED = "modelled"


def _escape_tag(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", r"\,").replace("=", r"\=").replace(" ", r"\ ")


@dataclass(frozen=True, slots=True)
class TelemetrySample:
    """One node's sample, stamped with the time it was measured.

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
        1 − power_w / power_cap_w.
    energy_wh : float or None
        Cumulative outlet energy counter (Wh), where the PDU offers one.
    """

    node: str
    measured_at_ns: int
    power_cap_w: float
    utilisation: float | None = None
    power_w: float | None = None
    source: PowerSource | None = None
    headroom: float | None = None
    energy_wh: float | None = None

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
            if (value := getattr(self, name)) is not None and math.isfinite(value)
        )
        return f"{MEASUREMENT},{tags} {fields} {self.measured_at_ns}"

    def to_json(self) -> dict[str, Any]:
        """The sample as a JSON-ready dict (JSONL sink and the extender's ingest endpoint)."""
        data = asdict(self)
        data["source"] = self.source.value if self.source is not None else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TelemetrySample:
        """Build a sample from :meth:`to_json` output.

        Raises
        ------
        ValueError
            Naming the key that is missing or has the wrong type.
        """
        try:
            source = data.get("source")
            return cls(
                node=str(data["node"]),
                measured_at_ns=int(data["measured_at_ns"]),
                power_cap_w=float(data["power_cap_w"]),
                utilisation=_opt_float(data.get("utilisation")),
                power_w=_opt_float(data.get("power_w")),
                source=PowerSource(source) if source is not None else None,
                headroom=_opt_float(data.get("headroom")),
                energy_wh=_opt_float(data.get("energy_wh")),
            )
        except KeyError as exc:
            raise ValueError(f"telemetry sample: missing key {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"telemetry sample: {exc}") from None


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)
