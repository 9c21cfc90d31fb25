"""Fixtures of the extender tests: calibration files, a controllable clock, app clients."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from eams.calibrate.calfile import Calibration, FitSummary, save_calibration
from eams.calibrate.fit import fit_linear
from eams.scheduler.extender.app import create_app
from eams.scheduler.extender.settings import Settings
from tests.servers.kube_binaries import kube_binaries  # noqa: F401 (the real control plane)
from tests.servers.kube_control_plane import control_plane  # noqa: F401

T0_S = 1_800_000_000.0  # a fixed "now" for the fake clock, epoch seconds


class FakeClock:
    """Epoch seconds that only move when a test says so."""

    def __init__(self, now_s: float = T0_S) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


def write_calibration(
    folder: Path, node: str, p_idle_w: float, p_max_w: float, speed: float = 1.0
) -> Path:
    """Fit a line through four noise-free levels and save it as ``folder/NODE.json``."""
    utilisation = [0.0, 0.25, 0.5, 0.75, 1.0]
    power_w = [p_idle_w + (p_max_w - p_idle_w) * u for u in utilisation]
    fit = fit_linear(utilisation, power_w)
    calibration = Calibration(
        node=node,
        created_at=datetime(2026, 11, 1, tzinfo=UTC),
        meter="snmp://127.0.0.1:1161",
        outlet=1,
        fit=FitSummary.from_result(fit),
        p_active_idle_w=p_idle_w,
        speed=speed,
    )
    return save_calibration(calibration, folder / f"{node}.json")


def sample(
    node: str,
    at_s: float,
    headroom: float | None,
    power_cap_w: float = 200.0,
    utilisation: float | None = 0.3,
) -> dict[str, Any]:
    """A ``TelemetrySample.to_json()`` dict (power consistent with the headroom)."""
    power_w = None if headroom is None else power_cap_w * (1.0 - headroom)
    return {
        "node": node,
        "measured_at_ns": int(at_s * 1e9),
        "power_cap_w": power_cap_w,
        "utilisation": utilisation,
        "power_w": power_w,
        "source": None if power_w is None else "metered",
        "headroom": headroom,
        "energy_wh": None,
    }


def node_object(
    name: str, cpu: str = "8", memory: str = "32Gi", pods: str = "110"
) -> dict[str, Any]:
    """A minimal but well-formed ``v1.Node`` as kube-scheduler serialises it."""
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
        },
    }


def pod_object(
    name: str, cpu: str | None = "500m", memory: str | None = "256Mi", namespace: str = "default"
) -> dict[str, Any]:
    """A pending pod of the eams-scheduler profile with one container."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {
            "schedulerName": "eams-scheduler",
            "containers": [{"name": "c", "resources": {"requests": requests}}],
        },
        "status": {"phase": "Pending"},
    }


def args_full(pod: dict[str, Any], nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """``ExtenderArgs`` as sent with ``nodeCacheCapable: false``."""
    return {"Pod": pod, "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": None}


def args_names(pod: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """``ExtenderArgs`` as sent with ``nodeCacheCapable: true``."""
    return {"Pod": pod, "Nodes": None, "NodeNames": names}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def calibrations_dir(tmp_path: Path) -> Path:
    """Calibrations of node-a (efficient), node-b (hungry), node-c (middle)."""
    folder = tmp_path / "calibrations"
    folder.mkdir()
    write_calibration(folder, "node-a", 40.0, 120.0)
    write_calibration(folder, "node-b", 80.0, 300.0)
    write_calibration(folder, "node-c", 60.0, 200.0)
    return folder


ClientFactory = Callable[..., Any]


@pytest.fixture
async def make_client(calibrations_dir: Path, clock: FakeClock) -> AsyncIterator[ClientFactory]:
    """``await make_client(**settings)`` → an httpx client on a fresh in-process app.

    The app's lifespan runs (so window tasks are cancelled at the end) and every client is
    closed when the test ends.
    """
    opened: list[tuple[httpx.AsyncClient, Any]] = []

    async def factory(**overrides: Any) -> httpx.AsyncClient:
        overrides.setdefault("calibrations_dir", calibrations_dir)
        app = create_app(Settings(**overrides), clock=clock)
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://extender"
        )
        client.app = app  # type: ignore[attr-defined]
        opened.append((client, lifespan))
        return client

    yield factory
    for client, lifespan in opened:
        await client.aclose()
        await lifespan.__aexit__(None, None, None)


async def post_json(client: httpx.AsyncClient, path: str, body: Any) -> httpx.Response:
    """POST ``body`` as JSON the way kube-scheduler does (``Content-Type: application/json``)."""
    return await client.post(
        path, content=json.dumps(body), headers={"Content-Type": "application/json"}
    )


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (uvicorn's and FastAPI's loop)."""
    return "asyncio"


async def eventually(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait until ``predicate()`` holds (a window clears within ms, but the machine is shared)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)
