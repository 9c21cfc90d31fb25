"""The latest telemetry sample of every node, and the ``POST /telemetry`` body contract.

Agents push ``{"samples": [TelemetrySample.to_json(), ...]}`` (the record and its rules are
:mod:`eams.telemetry`); the extender answers 202 ``{"accepted": n}`` or 400 naming the sample's
index and key.
A batch is checked completely before any sample is stored, so a bad batch changes nothing.
A sample older than the one already held for its node is ignored (agents may retry out of
order).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from eams.errors import TelemetryError
from eams.scheduler.extender.errors import BadRequest
from eams.telemetry import TelemetrySample


def parse_telemetry_body(body: bytes, now_s: float | None = None) -> list[TelemetrySample]:
    """Decode a ``POST /telemetry`` body; every sample goes through the one telemetry contract.

    Parameters
    ----------
    body : bytes
        JSON ``{"samples": [...]}``, each item a :meth:`TelemetrySample.to_json` dict.
    now_s : float, optional
        The extender's clock, epoch s; a sample measured more than
        :data:`eams.telemetry.MAX_AHEAD_S` after it is refused. ``None`` skips that check.

    Returns
    -------
    list of TelemetrySample

    Raises
    ------
    BadRequest
        Malformed JSON, a missing ``samples`` list, or a sample that breaks the contract of
        :mod:`eams.telemetry` (``samples[i].key: what``), including one stamped in the future.
    """
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body: malformed JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("samples"), list):
        raise BadRequest('body: must be an object {"samples": [...]}')
    now_ns = None if now_s is None else int(now_s * 1e9)
    from_json = TelemetrySample.from_json
    samples = []
    for index, item in enumerate(data["samples"]):
        try:
            samples.append(from_json(item, now_ns=now_ns))
        except TelemetryError as exc:
            where = f"samples[{index}]" if exc.key is None else f"samples[{index}].{exc.key}"
            raise BadRequest(f"{where}: {exc.detail}") from None
    return samples


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
