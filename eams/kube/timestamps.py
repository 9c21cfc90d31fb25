"""API timestamps (RFC 3339: ``metav1.Time`` to the second, ``metav1.MicroTime`` to the
microsecond) as epoch seconds."""

from __future__ import annotations

from datetime import datetime


def epoch_s(stamp: str | None) -> float | None:
    """An RFC 3339 API timestamp (``2025-01-02T03:04:05Z``, ``…05.123456Z``) as epoch seconds;
    ``None`` when absent or empty."""
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
