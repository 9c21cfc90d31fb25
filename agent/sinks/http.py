"""A small httpx POST shared by the sinks that speak plain HTTP (InfluxDB v1, extender)."""

from __future__ import annotations

import httpx

from eams.agent.errors import SinkError
from eams.agent.sinks.base import status_error


def post(
    client: httpx.Client,
    sink: str,
    url: str,
    content: bytes,
    *,
    params: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    """POST ``content`` and return on any 2xx answer.

    Raises
    ------
    SinkError
        Retryable for transport failures (refused, reset, timeout); by status otherwise
        (see :func:`~eams.agent.sinks.base.status_error`).
    """
    try:
        response = client.post(url, content=content, params=params, headers=headers)
    except httpx.TransportError as exc:
        raise SinkError(f"{sink}: {url}: {exc!r}", retryable=True) from exc
    if not response.is_success:
        raise status_error(
            sink, url, response.status_code, response.text, response.headers.get("retry-after")
        )
