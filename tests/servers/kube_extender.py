"""The EAMS extender beside a real control plane: ``eams extender serve --watch`` reading the
API server with a kubeconfig, its calibrations, and agents' telemetry fed by a thread.

:class:`KubeExtender` is :class:`~tests.servers.uvicorn.ExtenderServer` (the same click command
as ``eams extender serve``, a subprocess on a free loopback port) with ``--watch`` (the
kubernetes client reads ``KUBECONFIG``, set to the given file: a test passes the
``kube-system/eams-scheduler`` service account's, so a verb missing from the shipped RBAC fails
its watch or its patches) and ``--record DIR``. Started once ``/healthz`` answers;
:meth:`KubeExtender.ready` is ``/readyz`` (a calibration loaded, a telemetry sample in, every
watch listed), which needs the telemetry that only a started extender can take.

:func:`write_calibration` saves a calibration file (a noise-free line from P_idle to P_max)
for a node name; :class:`GateFallbackProcess` runs ``eams extender fallback`` (AR-5 for gated
pods) with a kubeconfig; :class:`TelemetryFeeder` posts each node's power headroom to ``/telemetry``
every ``period_s`` (readings older than 15 s never ground a floor decision, AR-6), as the
agents do, and at once when a test changes one.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from eams.calibrate.calfile import Calibration, FitSummary, save_calibration
from eams.calibrate.fit import fit_linear
from tests.servers._process import ServerProcess
from tests.servers.uvicorn import ExtenderServer

POWER_CAP_W = 1000.0
"""The telemetry's power cap: large beside the herding reservations (a pod of 100 m CPU on a
4-CPU node reserves ~2 W, the first pod of an empty node its P_idle), so a batch of test pods
does not move a node's headroom across the floor by itself."""


def write_calibration(folder: Path, node: str, p_idle_w: float, p_max_w: float) -> Path:
    """Fit a line through five noise-free levels from ``p_idle_w`` to ``p_max_w`` and save it
    as ``folder/NODE.json`` (what ``eams calibrate`` writes)."""
    utilisation = [0.0, 0.25, 0.5, 0.75, 1.0]
    fit = fit_linear(utilisation, [p_idle_w + (p_max_w - p_idle_w) * u for u in utilisation])
    calibration = Calibration(node=node, created_at=datetime(2026, 11, 1, tzinfo=UTC),
                              meter="snmp://127.0.0.1:1161", outlet=1,
                              fit=FitSummary.from_result(fit), p_active_idle_w=p_idle_w,
                              speed=1.0)  # fmt: skip
    return save_calibration(calibration, folder / f"{node}.json")


def sample(node: str, headroom: float, utilisation: float = 0.3) -> dict[str, Any]:
    """A metered ``TelemetrySample.to_json()`` of ``node`` measured now (power consistent with
    the headroom, h = 1 − P/P_cap)."""
    return {"node": node, "measured_at_ns": time.time_ns(), "power_cap_w": POWER_CAP_W,
            "utilisation": utilisation, "power_w": POWER_CAP_W * (1.0 - headroom),
            "source": "metered", "headroom": headroom, "energy_wh": None}  # fmt: skip


class KubeExtender(ExtenderServer):
    """``eams extender serve --mode MODE --watch --record RECORD`` with ``KUBECONFIG``.

    Parameters
    ----------
    root : Path
        Its log (``extender.log``) goes there.
    kubeconfig : Path
        What its watch, taint patches and annotations act as.
    calibrations_dir : Path
    record_dir : Path
        The decision record's folder (``decisions.jsonl`` in it).
    mode : {"active", "shadow"}
    """

    start_timeout_s = 60.0  # imports and the watch's first lists, on a busy machine

    def __init__(self, root: Path, kubeconfig: Path, calibrations_dir: Path, record_dir: Path,
                 mode: str = "active"):  # fmt: skip
        super().__init__(root / "extender.log", mode=mode, calibrations_dir=calibrations_dir)
        self.argv += ["--watch", "--record", str(record_dir)]
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        self.env.pop("KUBERNETES_SERVICE_HOST", None)  # never the in-cluster account
        self.record = record_dir / "decisions.jsonl"

    def ready(self) -> bool:
        """``GET /readyz`` answers 200."""
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2.0).status_code == 200
        except httpx.TransportError:
            return False

    def metrics(self) -> str:
        """``GET /metrics`` (Prometheus text)."""
        return httpx.get(f"{self.url}/metrics", timeout=5.0).text


class GateFallbackProcess(ServerProcess):
    """``eams extender fallback`` with ``KUBECONFIG``; "up" once it has logged its start (it
    serves no port). The same click command as the shipped Deployment's.

    Parameters
    ----------
    root : Path
        Its log (``fallback.log``) goes there.
    kubeconfig : Path
        What it reads the Lease and releases pods as.
    """

    STARTED = "fallback: releasing the gated pods"
    LAPSED = "the extender cannot release gated pods"
    RENEWED = "renewed: the extender releases gated pods again"

    def __init__(self, root: Path, kubeconfig: Path) -> None:
        super().__init__()
        self.log_path = root / "fallback.log"
        self.ready_url = str(self.log_path)
        eams = Path(sys.executable).parent / "eams"  # the installed command
        self.argv = [str(eams), "extender", "fallback", "--period-s", "0.5"]
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        self.env.pop("KUBERNETES_SERVICE_HOST", None)

    def _log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def answers(self) -> bool:
        return self.STARTED in self._log()

    def lapsed(self) -> bool:
        """True while its last word on the Lease is that it lapsed (it releases gated pods)."""
        log = self._log()
        return log.rfind(self.LAPSED) > log.rfind(self.RENEWED)

    def lapses(self) -> int:
        """How many times it logged the Lease lapsing."""
        return self._log().count(self.LAPSED)

    def released(self) -> list[str]:
        """``NAMESPACE/NAME`` of every pod it logged releasing."""
        return [line.split("pod ", 1)[1].split(":", 1)[0]
                for line in self._log().splitlines() if "released unpinned" in line]  # fmt: skip


class TelemetryFeeder:
    """Post every node's headroom to ``url/telemetry`` every ``period_s`` from a thread.

    A failed post (the extender killed, restarting) is counted in ``failures`` and retried at
    the next period.
    """

    def __init__(self, url: str, period_s: float = 1.0):
        self.url = url
        self.period_s = period_s
        self.headroom: dict[str, float] = {}
        self.posts = 0
        self.failures = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="telemetry", daemon=True)

    def start(self) -> TelemetryFeeder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()

    def set(self, node: str, headroom: float) -> None:
        """From now on ``node`` reports ``headroom``; posted at once."""
        with self._lock:
            self.headroom[node] = headroom
        self.post()

    def post(self) -> bool:
        """Post one fresh sample per node now; whether the extender took them."""
        with self._lock:
            samples = [sample(node, h) for node, h in self.headroom.items()]
            if not samples:
                return True
            try:
                answer = httpx.post(f"{self.url}/telemetry", json={"samples": samples},
                                    timeout=5.0)  # fmt: skip
                ok = answer.status_code == 202
            except httpx.HTTPError:
                ok = False
            self.posts += ok
            self.failures += not ok
            return ok

    def _run(self) -> None:
        while not self._stopping.wait(self.period_s):
            self.post()
