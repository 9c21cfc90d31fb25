"""The latest telemetry sample of every node, and the ``POST /telemetry`` body contract.

Agents push ``{"samples": [TelemetrySample.to_json(), ...]}`` (the record and its rules are
:mod:`eams.telemetry`); the extender answers 202 ``{"accepted": n}`` or 400 naming the sample's
index and key.
A batch is checked completely before any sample is stored, so a bad batch changes nothing.
Which of a node's samples counts — metered, modelled, or one without power — is decided by one
precedence rule, :class:`TelemetryStore`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import replace

from eams.errors import TelemetryError
from eams.scheduler.extender.errors import BadRequest
from eams.telemetry import PowerSource, TelemetrySample


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
    """Per node, the sample that counts, chosen by one precedence rule over its producers.

    Two agents speak for a node on a testbed: the PDU owner's publishes its *metered* power
    (without utilisation, which only the node knows; or a fresh *unknown* while the meter is
    down) and the node's own agent its *modelled* power. Keeping the newest whatever its
    source made a node's headroom flip between them from tick to tick (issue 16, item 2). So
    the newest sample of each kind is held — metered, modelled, without power — and the one
    that counts is, at the extender's clock:

    1. the newest *metered* sample while it is fresh;
    2. else the newest *modelled* sample while it is fresh (the model fills in);
    3. else the newest sample of any kind (nothing fresh has power: the newest, and so least
       discounted, stands; a fresh unknown then beats an old value).

    Fresh means an age ≤ ``stale_after_s``: the extender's ``Settings.stale_after_s``, AR-6's
    15 s, the limit beyond which a reading never grounds a filter decision and the bids
    discount it. When the sample that counts has no utilisation (the PDU owner's), the
    utilisation of the node's newest fresh sample that has one is carried with it, so the
    market still sees an idle node as empty. The rule is applied whenever a sample of the node
    arrives; a metered sample that turns stale in between is replaced at the node's next
    sample (its agent's next tick), and meanwhile counts as stale in ``/filter`` and the bids.
    Within a kind, a sample older than the one held is ignored (agents may retry out of order).

    Not thread-safe; the app touches it from its event loop only.

    Parameters
    ----------
    stale_after_s : float
        AR-6's freshness limit, s.
    clock : callable
        Epoch seconds (the extender's clock).
    """

    def __init__(self, stale_after_s: float, clock: Callable[[], float]) -> None:
        self._stale_after_ns = int(stale_after_s * 1e9)
        self._clock = clock
        self._metered: dict[str, TelemetrySample] = {}
        self._modelled: dict[str, TelemetrySample] = {}
        self._unpowered: dict[str, TelemetrySample] = {}
        self._kinds = {
            PowerSource.METERED: self._metered,
            PowerSource.MODELLED: self._modelled,
            None: self._unpowered,
        }
        self._counts: dict[str, TelemetrySample] = {}

    def ingest(self, samples: Iterable[TelemetrySample]) -> list[TelemetrySample]:
        """Hold each sample that is the newest of its node and kind, then re-apply the rule to
        the nodes they belong to.

        Returns
        -------
        list of TelemetrySample
            Per node whose counting sample changed, the new one (one per node, in order of
            first appearance); samples that change nothing are not returned.
        """
        touched: dict[str, None] = {}
        kinds = self._kinds
        for sample in samples:
            held = kinds[sample.source]
            kept = held.get(sample.node)
            if kept is None or sample.measured_at_ns >= kept.measured_at_ns:
                held[sample.node] = sample
                touched[sample.node] = None
        oldest_fresh_ns = int(self._clock() * 1e9) - self._stale_after_ns
        changed = []
        for node in touched:
            counts = self._metered.get(node)
            if (
                counts is None
                or counts.measured_at_ns < oldest_fresh_ns
                or counts.utilisation is None
            ):
                counts = self._choose(node, oldest_fresh_ns)
            previous = self._counts.get(node)
            if counts is not previous and (previous is None or counts != previous):
                self._counts[node] = counts
                changed.append(counts)
        return changed

    def _choose(self, node: str, oldest_fresh_ns: int) -> TelemetrySample:
        """The precedence rule of the class docstring over ``node``'s held samples (fresh:
        measured at or after ``oldest_fresh_ns``)."""
        held = [s for k in (self._metered, self._modelled, self._unpowered) if (s := k.get(node))]
        fresh = [s for s in held if s.measured_at_ns >= oldest_fresh_ns]
        counts = next(
            (s for s in fresh if s.source is not None), max(held, key=lambda s: s.measured_at_ns)
        )
        if counts.utilisation is not None:
            return counts
        known = [s for s in fresh if s.utilisation is not None]
        if not known:
            return counts
        newest = max(known, key=lambda s: s.measured_at_ns)
        return replace(counts, utilisation=newest.utilisation)

    def latest(self, node: str) -> TelemetrySample | None:
        """The sample that counts for ``node`` (see the class), or ``None`` if none arrived."""
        return self._counts.get(node)

    def __len__(self) -> int:
        return len(self._counts)
