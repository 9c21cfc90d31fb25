"""``GET /decisions`` on a FastAPI app in-process (httpx's ASGI transport), and ``eams explain
--extender`` against the same app served by uvicorn on a loopback socket."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from click.testing import CliRunner
from fastapi import FastAPI

from eams.cli import cli
from eams.scheduler.record.route import decisions_router
from eams.scheduler.record.schema import Placement, decode
from tests.conftest import free_port
from tests.record.recorded import record_run


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Placement]]:
    folder = tmp_path_factory.mktemp("record")
    return folder, record_run(folder)


def app_for(folder: Path) -> FastAPI:
    app = FastAPI()
    app.include_router(decisions_router(folder, max_records=50))
    return app


def get(folder: Path, params: dict[str, str]) -> httpx.Response:
    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app_for(folder))
        async with httpx.AsyncClient(transport=transport, base_url="http://extender") as c:
            return await c.get("/decisions", params=params)

    return asyncio.run(call())


def test_a_pods_records_in_the_record_format(recorded: tuple[Path, list[Placement]]) -> None:
    folder, placements = recorded
    answer = get(folder, {"pod": "default/job-0"})
    assert answer.status_code == 200
    body = answer.json()
    assert body["version"] == 1 and body["skipped"] == 0
    kinds = [r["kind"] for r in body["records"]]
    assert kinds == ["placement", "bound", "ended", "energy"]
    assert decode(httpx.Response(200, json=body["records"][0]).content) == placements[0]


def test_a_nodes_records_and_the_limit(recorded: tuple[Path, list[Placement]]) -> None:
    folder, _ = recorded
    every = get(folder, {"node": "mini-4"}).json()["records"]
    assert [r["kind"] for r in every].count("power") == 2
    newest = get(folder, {"node": "mini-4", "limit": "2"}).json()["records"]
    assert newest == every[-2:]
    assert get(folder, {"node": "mini-4", "limit": "999"}).json()["limit"] == 50  # the server's cap


@pytest.mark.parametrize(
    ("params", "detail"),
    [
        ({}, "give exactly one of pod="),
        ({"pod": "a", "node": "b"}, "give exactly one of pod="),
        ({"pod": "a", "limit": "many"}, "limit = 'many'"),
        ({"pod": "a", "limit": "0"}, "must be an integer ≥ 1"),
    ],
)
def test_bad_requests_are_400_with_a_reason(
    recorded: tuple[Path, list[Placement]], params: dict[str, str], detail: str
) -> None:
    answer = get(recorded[0], params)
    assert answer.status_code == 400 and detail in answer.json()["detail"]


def test_a_missing_folder_is_503_with_a_reason(tmp_path: Path) -> None:
    answer = get(tmp_path / "gone", {"pod": "a"})
    assert answer.status_code == 503 and "no such file or folder" in answer.json()["detail"]


@pytest.fixture
def served(recorded: tuple[Path, list[Placement]]) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app_for(recorded[0]), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def test_explain_reads_the_extender(served: str, recorded: tuple[Path, list[Placement]]) -> None:
    folder, placements = recorded
    over_http = CliRunner().invoke(cli, ["explain", "default/job-0", "--extender", served])
    from_file = CliRunner().invoke(cli, ["explain", "default/job-0", "--record", str(folder)])
    assert over_http.exit_code == 0, over_http.output
    assert over_http.output == from_file.output
    assert f"cleared   {placements[0].cleared_node}" in over_http.output
    node = CliRunner().invoke(cli, ["explain", "node/mini-4", "--extender", served + "/"])
    assert node.exit_code == 0 and "power decisions: 2" in node.output
