"""``GET /decisions``: the record served over HTTP (the client is :mod:`.remote`).

The route (mounted by the extender with ``app.include_router(decisions_router(folder))``)::

    GET /decisions?pod=NS/NAME|NAME|UID[&limit=N]
    GET /decisions?node=NAME[&limit=N]

    200 {"version": 1, "records": [<record>, ...], "skipped": <lines not decoded>,
         "limit": <the limit applied>}
        the newest ``limit`` (default 1,000; a larger one is cut to ``max_records``) records
        about the pod or node, oldest first, each in the record's own JSON format
    400 {"detail": "..."}   neither or both of pod= and node=, or a limit that is not ≥ 1
    503 {"detail": "..."}   the record folder cannot be read

It reads the folder the writer writes (what is at most ``flush_interval_s`` old), filtering each
line by a byte search before decoding it. The handler is a plain ``def``, so FastAPI runs it in
its thread pool, off the event loop that answers ``/filter`` and ``/prioritize``.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from eams.scheduler.record.errors import RecordReadError
from eams.scheduler.record.reader import Query, read_records
from eams.scheduler.record.remote import DEFAULT_LIMIT, PATH, Served
from eams.scheduler.record.schema import SCHEMA_VERSION

_encode = msgspec.json.Encoder().encode


def decisions_router(folder: Path, *, max_records: int = 10_000) -> APIRouter:
    """An ``APIRouter`` serving ``GET /decisions`` from the record ``folder``."""
    router = APIRouter()

    @router.get(PATH)
    def decisions(pod: str | None = None, node: str | None = None, limit: str = "") -> Response:
        if (pod is None) == (node is None):
            return _refuse(400, "give exactly one of pod= (NS/NAME, NAME or UID) or node=")
        count = int(limit) if limit.isdigit() else (DEFAULT_LIMIT if not limit else 0)
        if count < 1:
            return _refuse(400, f"limit = {limit!r}: must be an integer ≥ 1")
        count = min(count, max_records)
        try:
            result = read_records(folder, Query(pod=pod, node=node), limit=count)
        except RecordReadError as exc:
            return _refuse(503, str(exc))
        body = Served(SCHEMA_VERSION, result.records, result.skipped, limit=count)
        return Response(_encode(body), media_type="application/json")

    return router


def _refuse(status: int, detail: str) -> Response:
    return JSONResponse({"detail": detail}, status_code=status)
