"""Read a run's telemetry from InfluxDB over the 1.x query API (InfluxQL, ``/query``).

The query (InfluxQL, https://docs.influxdata.com/influxdb/v1/query_language/)::

    SELECT * FROM "eams_node" WHERE time >= <start>ns AND time <= <end>ns GROUP BY "node","source"

is sent with ``epoch=ns`` (integer nanosecond timestamps) and ``chunked=true`` (so the server's
``max-row-limit`` cannot silently truncate a long run). Each row becomes the same record dict that
a JSONL line holds, so one parser (:meth:`eams.telemetry.TelemetrySample.from_json`) reads both
stores.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from eams.calibrate.wallpower.errors import InfluxUnreachable, RunDataError
from eams.calibrate.wallpower.spec import RunSpec

TIMEOUT_S = 10.0
ANSWER_DEADLINE_S = 300.0
"""Longest the whole answer may take: a server that trickles bytes never trips :data:`TIMEOUT_S`
(which bounds each read), so the answer as a whole has its own bound."""
CHUNK_ROWS = 10_000


def _ident(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def influx_query(spec: RunSpec) -> str:
    """The InfluxQL text that selects ``spec``'s window (closed interval, ns literals)."""
    return (
        f"SELECT * FROM {_ident(spec.measurement or '')} "
        f"WHERE time >= {spec.start_ns} AND time <= {spec.end_ns} "
        'GROUP BY "node","source"'
    )


def _records(result: dict[str, Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if "error" in result:
        raise RunDataError(f"{where}: InfluxDB says: {result['error']}")
    for series in result.get("series", ()):
        tags = series.get("tags") or {}
        columns = series["columns"]
        for row in series["values"]:
            record = {k: v for k, v in zip(columns, row, strict=True) if v is not None}
            record.pop("node", None)
            record.pop("source", None)
            record["measured_at_ns"] = record.pop("time")
            record["node"] = tags.get("node")
            record["source"] = tags.get("source") or None
            yield f"{where} (series node={record['node']}, time {record['measured_at_ns']})", record


def _lines(response: httpx.Response, deadline: float, where: str) -> Iterator[str]:
    """The answer's lines (InfluxDB's chunks are JSON lines), given up on after ``deadline``."""
    parts: list[str] = []
    for chunk in response.iter_text():
        if time.monotonic() > deadline:
            raise InfluxUnreachable(
                f"{where}: the answer did not complete within {ANSWER_DEADLINE_S:g} s"
            )
        *complete, rest = chunk.split("\n")
        if complete:
            complete[0] = "".join(parts) + complete[0]
            parts = []
            yield from complete
        parts.append(rest)
    if tail := "".join(parts):
        yield tail


def _answer_records(answer: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The records of one chunk; anything not shaped like an InfluxDB 1.x answer is named."""
    try:
        if "error" in answer:
            raise RunDataError(f"{where}: InfluxDB says: {answer['error']}")
        for result in answer.get("results", ()):
            yield from _records(result, where)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise RunDataError(
            f"{where}: the answer is not an InfluxDB 1.x query result ({type(exc).__name__}: "
            f"{exc}); is this InfluxDB?"
        ) from None


def read_influx(spec: RunSpec) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(where, record)`` for every point of the run's window.

    Parameters
    ----------
    spec : RunSpec
        A ``kind == "influx"`` SPEC (URL, database, measurement, window, auth).

    Yields
    ------
    where : str
        The query location, for messages.
    record : dict
        The :meth:`TelemetrySample.to_json` keys present in the point.

    Raises
    ------
    InfluxUnreachable
        Connection refused, DNS failure, no byte for :data:`TIMEOUT_S` or no complete answer
        within :data:`ANSWER_DEADLINE_S`, naming the URL.
    RunDataError
        An HTTP error or an ``error`` in the answer (unknown database, bad query).
    """
    where = f"{spec.influx_url}/query db={spec.database}"
    params = {
        "db": spec.database,
        "q": influx_query(spec),
        "epoch": "ns",
        "chunked": "true",
        "chunk_size": str(CHUNK_ROWS),
    }
    try:
        with (
            httpx.Client(timeout=TIMEOUT_S, auth=spec.auth) as client,
            client.stream("POST", f"{spec.influx_url}/query", data=params) as response,
        ):
            lines = _lines(response, time.monotonic() + ANSWER_DEADLINE_S, where)
            if response.status_code != 200:
                body = "\n".join(lines).strip()
                raise RunDataError(f"{where}: HTTP {response.status_code}: {body[:300]}")
            for line in lines:
                if line.strip():
                    yield from _answer_records(json.loads(line), where)
    except httpx.TimeoutException as exc:
        raise InfluxUnreachable(f"{where}: no answer within {TIMEOUT_S:g} s") from exc
    except httpx.TransportError as exc:
        raise InfluxUnreachable(
            f"{spec.influx_url}: cannot reach InfluxDB ({exc}); is influxd running there?"
        ) from exc
    except json.JSONDecodeError as exc:
        raise RunDataError(f"{where}: the answer is not JSON ({exc})") from exc
