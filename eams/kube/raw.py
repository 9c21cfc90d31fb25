"""Kubernetes answers read as published: JSON decoded by msgspec into plain dicts, not into the
client's model objects (``_preload_content=False``; one decoder for every caller)."""

from __future__ import annotations

from typing import Any

import msgspec

decode_object = msgspec.json.Decoder(dict[str, Any]).decode
"""One JSON object (bytes or str) → dict; raises ``msgspec.DecodeError`` on anything else."""


def read_object(response: Any) -> dict[str, Any]:
    """The JSON object of a ``_preload_content=False`` answer, its connection released.

    Parameters
    ----------
    response : urllib3.HTTPResponse
        What a ``kubernetes.client`` call returns with ``_preload_content=False``.

    Raises
    ------
    msgspec.DecodeError
        The body is not one JSON object.
    """
    try:
        return decode_object(response.data)
    finally:
        response.release_conn()
