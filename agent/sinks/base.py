"""The one interface every sink implements, and the HTTP status → :class:`SinkError` rule.

A *batch* is a list of records already encoded by the sink's own :meth:`Sink.encode` (a line of
line protocol, a JSON object). The spool stores exactly these strings, so a replay sends the
very bytes a live write would have sent: timestamps cannot change on the way, and replay needs
no decoding (see the spool replay benchmark).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from eams.agent.errors import SinkError
from eams.telemetry import TelemetrySample

#: Statuses that say the batch itself is bad: sending it again can never succeed.
REJECTED_STATUSES = frozenset({400, 413, 422})


class Sink(Protocol):
    """Where samples go. Implementations: :mod:`.influx_v2`, :mod:`.influx_v1`,
    :mod:`.extender`, :mod:`.jsonl` (the name → factory map is :data:`eams.agent.sinks.SINKS`).
    """

    name: str

    def encode(self, sample: TelemetrySample) -> str:
        """One sample as this sink's record (a line-protocol line, a JSON object)."""
        ...

    def write(self, batch: Sequence[str]) -> None:
        """Write ``batch`` (records from :meth:`encode`, oldest first) and return once the
        destination acknowledged all of them.

        Raises
        ------
        SinkError
            ``retryable=True`` when the batch may succeed later (down, 5xx, 429, 401/403/404
            while an operator fixes the server), ``False`` when the server rejects the points.
        """
        ...

    def close(self) -> None:
        """Release connections and files. Idempotent."""
        ...


def status_error(sink: str, url: str, status: int, body: str, retry_after: str | None) -> SinkError:
    """The :class:`SinkError` for an HTTP answer that is not 2xx.

    Parameters
    ----------
    sink, url : str
        Named in the message.
    status : int
        HTTP status; 400/413/422 are not retryable (RFC 9110 §15.5: the request is at fault).
    body : str
        The server's explanation (first 200 characters are kept).
    retry_after : str or None
        The ``Retry-After`` header (RFC 9110 §10.2.3), used when it is a number of seconds.
    """
    try:
        retry_after_s = float(retry_after) if retry_after is not None else None
    except ValueError:
        retry_after_s = None  # an HTTP-date: fall back to the channel's own backoff
    return SinkError(
        f"{sink}: {url} answered {status}: {body.strip()[:200]}",
        retryable=status not in REJECTED_STATUSES,
        retry_after_s=retry_after_s,
    )
