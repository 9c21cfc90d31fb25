"""The latest telemetry sample of every node, and the ``POST /telemetry`` body contract.

Agents push ``{"samples": [TelemetrySample.to_json(), ...]}`` (``docs/architecture.md``, agent
section); the extender answers 202 ``{"accepted": n}`` or 400 naming the sample's index and key.
A batch is checked completely before any sample is stored, so a bad batch changes nothing.
A sample older than the one already held for its node is ignored (agents may retry out of
order).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from eams.agent.schema import TelemetrySample
from eams.scheduler.extender.errors import BadRequest

_FLOAT_KEYS = ("power_cap_w", "utilisation", "power_w", "headroom", "energy_wh")
# How far a sample may be stamped ahead of the extender's clock, s (clock skew between an
# agent's node and the extender's; NTP keeps it far below). A sample from the future would
# look fresh until its stamp passed and, being "newest", would hide every real sample till then.
MAX_AHEAD_S = 5.0


def _check_sample(index: int, item: Any, now_s: float | None) -> TelemetrySample:
    where = f"samples[{index}]"
    if not isinstance(item, dict):
        raise BadRequest(f"{where}: must be an object, got {type(item).__name__}")
    node = item.get("node")
    if not isinstance(node, str) or not node:
        raise BadRequest(f"{where}.node: must be a non-empty string, got {node!r}")
    stamp = item.get("measured_at_ns")
    if isinstance(stamp, bool) or not isinstance(stamp, int):
        raise BadRequest(f"{where}.measured_at_ns: must be an integer (epoch ns), got {stamp!r}")
    if now_s is not None and stamp / 1e9 > now_s + MAX_AHEAD_S:
        ahead_s = stamp / 1e9 - now_s
        raise BadRequest(
            f"{where}.measured_at_ns: {ahead_s:.3g} s ahead of the extender's clock "
            f"(at most {MAX_AHEAD_S:g} s; epoch nanoseconds expected)"
        )
    for key in _FLOAT_KEYS:
        value = item.get(key)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise BadRequest(f"{where}.{key}: must be a finite number or null, got {value!r}")
    cap = item.get("power_cap_w")
    if cap is None or cap <= 0:
        raise BadRequest(f"{where}.power_cap_w: must be a positive number (W), got {cap!r}")
    try:
        return TelemetrySample.from_json(item)
    except ValueError as exc:
        raise BadRequest(f"{where}: {exc}") from None


def parse_samples(body: bytes, now_s: float | None = None) -> list[TelemetrySample]:
    """Decode a ``POST /telemetry`` body.

    Parameters
    ----------
    body : bytes
        JSON ``{"samples": [...]}``, each item a :meth:`TelemetrySample.to_json` dict.
    now_s : float, optional
        The extender's clock, epoch s; a sample measured more than :data:`MAX_AHEAD_S` after
        it is refused. ``None`` skips that check.

    Returns
    -------
    list of TelemetrySample

    Raises
    ------
    BadRequest
        Malformed JSON, a missing ``samples`` list, or a bad sample (names index and key),
        including one stamped in the future.
    """
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body: malformed JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("samples"), list):
        raise BadRequest('body: must be an object {"samples": [...]}')
    return [_check_sample(i, item, now_s) for i, item in enumerate(data["samples"])]


class TelemetryStore:
    """The newest :class:`TelemetrySample` per node.

    Not thread-safe; the app touches it from its event loop only.
    """

    def __init__(self) -> None:
        self._latest: dict[str, TelemetrySample] = {}

    def ingest(self, samples: Iterable[TelemetrySample]) -> list[TelemetrySample]:
        """Store each sample that is newer than what is held for its node.

        Returns
        -------
        list of TelemetrySample
            The samples that were stored (older duplicates are dropped).
        """
        stored = []
        for sample in samples:
            held = self._latest.get(sample.node)
            if held is None or sample.measured_at_ns >= held.measured_at_ns:
                self._latest[sample.node] = sample
                stored.append(sample)
        return stored

    def latest(self, node: str) -> TelemetrySample | None:
        """The newest sample of ``node``, or ``None`` if none arrived."""
        return self._latest.get(node)

    def __len__(self) -> int:
        return len(self._latest)
