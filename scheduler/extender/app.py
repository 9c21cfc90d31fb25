"""The FastAPI app factory of the extender: HTTP in, :class:`~.service.Extender` decides.

Routes (all JSON):

=========================  ======================================================  ==========
route                      body / answer                                           codes
=========================  ======================================================  ==========
``POST /filter``           ``ExtenderArgs`` → ``ExtenderFilterResult``           200 400 413 503
``POST /prioritize``       ``ExtenderArgs`` → ``[{"Host", "Score"}]`` (0–10 ints) 200 400 413 503
``POST /telemetry``        ``{"samples": [TelemetrySample.to_json()]}`` →            202 400 413
                           ``{"accepted": n}``
``POST /nodes``            ``v1.NodeList`` (the watch's HTTP twin) → ``{"accepted"}``  202 400 413
``POST /pending``          ``v1.PodList``: pending pods join a window, bound ones      202 400 413
                           use capacity → ``{"accepted": n}``
``GET /healthz``           ``{"status": "ok"}`` while the process serves            200
``GET /readyz``            ``{"ready": bool, "missing": [...]}``                     200 503
``GET /metrics``           Prometheus text (``eams_extender_*``)                     200
``GET /recommendations``   recorded shadow-mode recommendations, newest last         200
``GET /decisions``         the decision record (``--record``): ``?pod=`` or ``?node=``  200 400 503
=========================  ======================================================  ==========

The two verbs on kube-scheduler's critical path are answered by ``verbs.py`` straight from the
outermost ASGI layer (no routing, no request objects: their cost is the scheduler's
throughput); FastAPI serves the rest. Strict where a wrong answer would hurt (reference §8.1):
malformed JSON, a missing or null ``Pod``, or a wrong type is a 400 whose ``Error`` names the
key; a body over ``max_body_bytes`` is a 413; active but blind to the nodes is a 503 (step
aside). Never a 500: an unexpected error inside filter answers 200 with every input node
passing (fail open, like ``ignorable: true``), inside prioritize 200 with an empty list (no
opinion), and anything escaping a route is caught by the outermost middleware, logged,
counted and answered 503 ``{"Error": ...}`` so kube-scheduler ignores this extender for that
call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError
from pydantic_core import to_json
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from eams.kube.pods import PodObject
from eams.scheduler.auction import AuctionParams
from eams.scheduler.extender.calibrations import load_calibrations
from eams.scheduler.extender.clock import Clock
from eams.scheduler.extender.errors import BadRequest, PayloadTooLarge
from eams.scheduler.extender.metrics import ExtenderMetrics
from eams.scheduler.extender.schemas import NodeList
from eams.scheduler.extender.service import Extender
from eams.scheduler.extender.settings import Settings
from eams.scheduler.extender.telemetry import parse_telemetry_body
from eams.scheduler.extender.verbs import JSON, Verbs
from eams.scheduler.record.route import decisions_router
from eams.validation import describe_validation_error

log = logging.getLogger(__name__)

KNOWN_PATHS = frozenset(
    (
        "/filter",
        "/prioritize",
        "/telemetry",
        "/nodes",
        "/pending",
        "/healthz",
        "/readyz",
        "/metrics",
        "/recommendations",
        "/decisions",
    )
)


async def read_body(request: Request, limit_bytes: int) -> bytes:
    """The request body, refusing more than ``limit_bytes`` without reading it all.

    Raises
    ------
    PayloadTooLarge
        Declared (``Content-Length``) or actual size over the limit.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit_bytes:
        raise PayloadTooLarge(f"body: {declared} bytes is over the limit of {limit_bytes}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit_bytes:
            raise PayloadTooLarge(f"body: over the limit of {limit_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


HOT_PATHS = frozenset(("/filter", "/prioritize"))


async def receive_body(scope: Scope, receive: Receive, limit_bytes: int) -> bytes:
    """The body of an ASGI request, refusing more than ``limit_bytes`` (:func:`read_body`)."""
    for name, value in scope["headers"]:
        if name == b"content-length" and value.isdigit() and int(value) > limit_bytes:
            raise PayloadTooLarge(f"body: {int(value)} bytes is over the limit of {limit_bytes}")
    chunks, size = [], 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit_bytes:
            raise PayloadTooLarge(f"body: over the limit of {limit_bytes} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


class _Guard:
    """The outermost ASGI layer: times every request, answers the two verbs itself
    (``verbs.py``) and turns any escape into a 503 (:class:`ExtenderApp` puts one in front of
    FastAPI for the verbs, and one as FastAPI's outermost middleware for the rest)."""

    def __init__(self, app: ASGIApp, metrics: ExtenderMetrics, verbs: Verbs, limit: int) -> None:
        self.app = app
        self.metrics = metrics
        self.verbs = verbs
        self.limit = limit

    async def _verb(self, scope: Scope, receive: Receive, send: Send, status: dict) -> None:
        path = scope["path"]
        try:
            code, body = self.verbs.answer(path, await receive_body(scope, receive, self.limit))
        except PayloadTooLarge as exc:
            self.metrics.errors.labels(path, "too_large").inc()
            code, body = 413, to_json({"Error": str(exc)})
        status["code"] = code
        headers = [(b"content-type", JSON), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": code, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"] if scope["path"] in KNOWN_PATHS else "other"
        started = time.perf_counter()
        status = {"code": 0}

        async def send_and_note(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            if scope["path"] in HOT_PATHS and scope["method"] == "POST":
                await self._verb(scope, receive, send, status)
            else:
                await self.app(scope, receive, send_and_note)
        except Exception:
            log.exception("unhandled error on %s", scope["path"])
            self.metrics.errors.labels(path, "internal").inc()
            if status["code"] == 0:
                status["code"] = 503
                await JSONResponse({"Error": "eams extender internal error (logged)"}, 503)(
                    scope, receive, send
                )
        finally:
            self.metrics.request_seconds.labels(path, str(status["code"])).observe(
                time.perf_counter() - started
            )


class ExtenderApp(FastAPI):
    """FastAPI with a :class:`_Guard` in front: ``POST /filter`` and ``/prioritize`` meet it
    first and never enter Starlette's middleware stack (error, telemetry and body-limit
    layers: ≈ 15 % of a verb call's CPU by py-spy, issue 15). Every other request goes
    through FastAPI, where the same guard class is the outermost user middleware (inside
    Starlette's error layer, which it pre-empts with its 503)."""

    front: _Guard | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        front = self.front
        if (
            front is not None
            and scope["type"] == "http"
            and scope["path"] in HOT_PATHS
            and scope["method"] == "POST"
        ):
            await front(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)


# Feed bodies larger than this are decoded in a worker thread, and samples are stored this many
# at a time with the loop free in between: a 35 MB telemetry POST (200,000 samples) decoded on
# the loop held every /filter for 3.2 s, over kube-scheduler's 1 s httpTimeout.
OFF_LOOP_BYTES = 256 * 1024
STORE_CHUNK = 2000


async def _decode(parse: Callable[..., Any], body: bytes, *args: Any) -> Any:
    """``parse(body, *args)``, in a worker thread when the body is large (see OFF_LOOP_BYTES)."""
    if len(body) <= OFF_LOOP_BYTES:
        return parse(body, *args)
    return await asyncio.to_thread(parse, body, *args)


_Item = TypeVar("_Item")


async def _in_chunks(store: Callable[[list[_Item]], int], items: list[_Item]) -> int:
    """``store`` every item, STORE_CHUNK at a time, yielding to the loop between chunks."""
    stored = 0
    for start in range(0, len(items), STORE_CHUNK):
        if start:
            await asyncio.sleep(0)
        stored += store(items[start : start + STORE_CHUNK])
    return stored


def _error(metrics: ExtenderMetrics, path: str, exc: BadRequest | PayloadTooLarge) -> JSONResponse:
    too_large = isinstance(exc, PayloadTooLarge)
    metrics.errors.labels(path, "too_large" if too_large else "bad_request").inc()
    return JSONResponse({"Error": str(exc)}, status_code=413 if too_large else 400)


def _json(data: Any, status_code: int = 200) -> Response:
    return Response(to_json(data), status_code, media_type="application/json")


def _list_items(body: bytes) -> list[Any]:
    """``items`` of a Kubernetes list body (``v1.NodeList``, ``v1.PodList``), as received."""
    try:
        parsed = NodeList.model_validate_json(body)  # any v1 list: {"metadata", "items"}
    except ValidationError as exc:
        raise BadRequest(describe_validation_error(exc, top="body")) from None
    if parsed.items is None:
        raise BadRequest("items: must be a list")
    return parsed.items


def _pods(items: list[Any]) -> list[PodObject]:
    """The pods of a ``v1.PodList``'s items, every one validated before any is used (a bad one
    names its index)."""
    pods = []
    for i, item in enumerate(items):
        try:
            pods.append(PodObject.model_validate(item))
        except ValidationError as exc:
            raise BadRequest(describe_validation_error(exc, root=f"items[{i}]")) from None
    return pods


def create_app(
    settings: Settings,
    clock: Clock | Callable[[], float] = time.time,
    *,
    params: AuctionParams | None = None,
    on_startup: Callable[[Extender], Callable[[], None]] | None = None,
) -> ExtenderApp:
    """Build the extender app.

    Parameters
    ----------
    settings : Settings
    clock : Clock or callable
        The extender's one clock (``clock.py``): epoch seconds for every age, and the batch
        window's timer. A plain callable (tests pass a controllable one to age telemetry) runs
        the window on the event loop; the bench passes a :class:`~.clock.ManualClock` it
        moves in simulated time.
    params : AuctionParams, optional
        Engine parameters; ``AuctionParams()`` by default.
    on_startup : callable, optional
        Called with the :class:`Extender` when the app starts; returns a stop function called at
        shutdown (``watch.py`` uses it to run the API-server watch).

    Returns
    -------
    ExtenderApp
        A FastAPI app; ``app.state.extender`` is the :class:`Extender`.

    Raises
    ------
    ExtenderConfigError
        A calibration file in ``settings.calibrations_dir`` is unreadable or duplicated.
    """
    calibrations = load_calibrations(settings.calibrations_dir) if settings.calibrations_dir else {}
    metrics = ExtenderMetrics()
    extender = Extender(settings, calibrations, metrics, clock, params)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        stop = on_startup(extender) if on_startup is not None else None
        try:
            yield
        finally:
            if stop is not None:
                stop()
            if extender.batcher is not None:
                await extender.batcher.close()
            if extender.decisions is not None:
                extender.decisions.close()

    app = ExtenderApp(
        title="EAMS kube-scheduler extender", lifespan=lifespan, docs_url=None, redoc_url=None
    )
    app.state.extender = extender
    limit = settings.max_body_bytes

    @app.post("/telemetry")
    async def telemetry(request: Request) -> Response:
        try:
            samples = await _decode(
                parse_telemetry_body, await read_body(request, limit), extender.clock()
            )
        except (BadRequest, PayloadTooLarge) as exc:
            return _error(metrics, "/telemetry", exc)
        return _json({"accepted": await _in_chunks(extender.ingest, samples)}, 202)

    @app.post("/nodes")
    async def nodes(request: Request) -> Response:
        try:
            items = await _decode(_list_items, await read_body(request, limit))
            count = extender.observe_nodes(items)
        except (BadRequest, PayloadTooLarge) as exc:
            return _error(metrics, "/nodes", exc)
        return _json({"accepted": count}, 202)

    @app.post("/pending")
    async def pending(request: Request) -> Response:
        try:
            items = await _decode(_list_items, await read_body(request, limit))
            pods = _pods(items)
            for i, pod in enumerate(pods):
                extender.observe_pod(pod, f"items[{i}]")
        except (BadRequest, PayloadTooLarge) as exc:
            return _error(metrics, "/pending", exc)
        if extender.decisions is not None:  # the pod watch's twin: bound pods join the record
            for item in items:
                extender.decisions.observe({"type": "ADDED", "object": item})
        return _json({"accepted": len(pods)}, 202)

    @app.get("/healthz")
    async def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        missing = extender.readiness()
        return _json({"ready": not missing, "missing": missing}, 503 if missing else 200)

    @app.get("/metrics")
    async def metrics_() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/recommendations")
    async def recommendations() -> Response:
        return _json(list(extender.recommendations))

    if extender.decisions is not None:
        app.include_router(decisions_router(extender.decisions.folder))
    verbs = Verbs(extender, metrics)
    app.add_middleware(_Guard, metrics=metrics, verbs=verbs, limit=limit)
    app.front = _Guard(app.router, metrics, verbs, limit)  # its app is never reached: hot only
    return app
