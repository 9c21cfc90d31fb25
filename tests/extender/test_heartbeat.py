"""The extender's Lease heartbeat (``heartbeat.py``) against the real kube-apiserver 1.36, as
the shipped ``kube-system/eams-scheduler`` account: renewed every second while the extender is
ready, left to lapse while it is not, let go on a clean stop. The extender here is a stand-in
for one thing only, its readiness, which the test turns off and on (the real one's readiness is
``/readyz``'s, tested in ``test_watch.py`` and ``test_app.py``); the fallback that judges the
Lease: ``tests/k8s/test_gate_fallback.py``."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from eams.kube.client import coordination_api, core_api, load_configuration
from eams.kube.lease import read_lease_spec
from eams.kube.names import MARKET_LEASE
from eams.scheduler.extender.heartbeat import Heartbeat, holder_identity
from tests.servers.kube_control_plane import ControlPlane

pytestmark = pytest.mark.anyio

NAMESPACE, NAME = MARKET_LEASE.split("/")


@dataclass
class Settings:
    lease: str = MARKET_LEASE


@dataclass
class ReadinessOnly:
    """What :class:`Heartbeat` reads of the extender: its settings and ``readiness()``."""

    settings: Settings = field(default_factory=Settings)
    missing: list[str] = field(default_factory=list)

    def readiness(self) -> list[str]:
        return list(self.missing)


async def renew_times(coordination: Any, seconds: float) -> list[str]:
    """The Lease's ``renewTime`` read every 0.25 s for ``seconds`` (None while missing)."""
    seen = []
    for _ in range(int(seconds / 0.25)):
        spec = await asyncio.to_thread(read_lease_spec, coordination, NAMESPACE, NAME)
        seen.append(None if spec is None else spec.get("renewTime"))
        await asyncio.sleep(0.25)
    return seen


async def test_renewed_while_ready_lapsing_while_not_let_go_on_stop(
    control_plane: ControlPlane,
) -> None:
    admin = coordination_api(core_api(load_configuration(control_plane.kubeconfig())))
    account = core_api(load_configuration(control_plane.kubeconfig("kube-system/eams-scheduler")))
    extender = ReadinessOnly(missing=["no telemetry received yet"])
    heartbeat = Heartbeat(extender, asyncio.get_running_loop(), coordination_api(account))  # type: ignore[arg-type]
    heartbeat.start()
    try:
        assert set(await renew_times(admin, 1.5)) == {None}  # not ready: never written
        extender.missing = []
        ready = await renew_times(admin, 3.0)
        assert len({t for t in ready if t}) >= 2  # renewed every second once ready
        spec = read_lease_spec(admin, NAMESPACE, NAME)
        assert spec is not None and spec["holderIdentity"] == holder_identity()
        extender.missing = ["watch pending pods: not listed yet"]
        await asyncio.sleep(1.2)  # a renewal in flight may still land
        assert len(set(await renew_times(admin, 2.5))) == 1  # not ready: no renewal
        extender.missing = []
        assert len(set(await renew_times(admin, 2.5))) >= 2  # ready again: renewed again
    finally:
        await asyncio.to_thread(heartbeat.stop)
    spec = read_lease_spec(admin, NAMESPACE, NAME)
    assert spec is not None and not spec.get("holderIdentity")  # let go: the fallback acts now
