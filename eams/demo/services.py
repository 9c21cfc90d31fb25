"""Demo stage 3 services: the extender on a loopback socket and one agent per virtual node.

The agents are deployed as on the real testbed: ``mini-1`` owns the PDU link (meter and outlet
map) and publishes every node's *metered* power; every node's own agent publishes its
utilisation (read from its virtual ``/proc/stat``) and its *modelled* power from its
calibration file. Each agent writes a JSONL file and pushes to the extender
(``POST /telemetry``), exactly as configured in production (:mod:`eams.agent.config`).
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from prometheus_client.parser import text_string_to_metric_families

from eams.agent.config import parse_config
from eams.agent.runner import Agent
from eams.agent.sampler import TimedReading
from eams.demo.errors import DemoError
from eams.demo.testbed import DRIVER, Testbed
from eams.errors import EamsError
from eams.scheduler.extender.app import create_app
from eams.scheduler.extender.decisions import record_settings
from eams.scheduler.extender.service import Extender
from eams.scheduler.extender.settings import Mode, Settings

HOST = "127.0.0.1"
START_TIMEOUT_S = 10.0
HERD_SETTLE_PERIODS = 3
"""The extender's herding settle time in agent periods: a demo pod loads its node as it is
bound (milliseconds after its clearing); the node's agent reads its utilisation and the PDU
owner the meter every period, so a sample measured 3 periods after the clearing holds the pod.
The production 10 s would hold, in the quick demo's 6-second run, every reservation to the
end: the nodes' headroom went below the floor on reservations alone (issue 35, item 1)."""
HERD_TTL_PERIODS = 36
"""The reservation's upper bound in agent periods: 12 settle times, as in production (120 s
against 10 s)."""


class ExtenderServer:
    """The extender app (the fleet's calibrations) under uvicorn in a thread.

    The listening socket is bound here, not by uvicorn, so the port is the one the URL names
    from the start and a bind failure is a :class:`DemoError` rather than uvicorn's log line.

    Parameters
    ----------
    calibrations_dir : Path
    port : int
        TCP port on loopback; 0 (the default) lets the OS choose a free one.
    mode : {"active", "shadow"}
        Active (the default): its answers place the EAMS run's pods.
    record : Path or None
        Its decision record's folder (``eams extender serve --record DIR --no-annotate``: no
        API server runs here to annotate pods on); ``None``: no record. ``/prioritize``
        answers every candidate (``--prioritize-answer all``), which the report reads.
    period_s : float or None
        The agents' sample period, s: the herding guard's settle time and TTL are
        :data:`HERD_SETTLE_PERIODS` and :data:`HERD_TTL_PERIODS` of it (a demo pod loads its
        node when it is bound, and the next samples show it); ``None``: the production
        defaults (10 s, 120 s), which in a run compressed to seconds hold every pod's
        reservation for the whole run.
    market_wakes : bool
        Whether its market prices the asleep nodes and holds pods for their wakes
        (``--market-wakes``, the default) or leaves the wakes to the power manager.

    Raises
    ------
    DemoError
        The port cannot be bound (names the address and why), or the extender refuses the
        calibration files (its own message).
    """

    def __init__(
        self,
        calibrations_dir: Path,
        port: int = 0,
        mode: Mode = "active",
        record: Path | None = None,
        period_s: float | None = None,
        market_wakes: bool = True,
    ) -> None:
        self.mode = mode
        try:
            settings = Settings(
                mode=mode,
                market_wakes=market_wakes,
                calibrations_dir=calibrations_dir,
                record=None if record is None else record_settings(record),
                annotate=False,
                # the report explains each placement by every candidate's 0–10 bid score and
                # takes the candidates from the answer, so the demo asks for the full list
                prioritize_answer="all",
            )
            if period_s is not None:
                settings = replace(
                    settings,
                    herd_settle_s=HERD_SETTLE_PERIODS * period_s,
                    herd_ttl_s=HERD_TTL_PERIODS * period_s,
                )
            self.app = create_app(settings)
        except EamsError as exc:
            raise DemoError(f"the extender did not start: {exc}") from exc
        self._socket = socket.socket()
        try:
            self._socket.bind((HOST, port))
        except OSError as exc:
            self._socket.close()
            raise DemoError(
                f"the extender cannot listen on {HOST}:{port}: {exc.strerror or exc}"
            ) from exc
        self.port = int(self._socket.getsockname()[1])
        self.url = f"http://{HOST}:{self.port}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="eams-demo-extender"
        )

    @property
    def extender(self) -> Extender:
        """The app's :class:`~eams.scheduler.extender.service.Extender` (in-process: the demo
        sets its ``on_wake_request``)."""
        return self.app.state.extender

    def __enter__(self) -> ExtenderServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> ExtenderServer:
        """Serve; returns once it listens.

        Raises
        ------
        DemoError
            It did not start within :data:`START_TIMEOUT_S` (it is stopped first).
        """
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise DemoError(
                    f"the extender did not start on {self.url} within {START_TIMEOUT_S:g} s"
                )
            time.sleep(0.02)
        return self

    def _metric(self, name: str, **labels: str) -> int | None:
        """Sum of the samples ``name`` with ``labels`` on its ``/metrics`` (``None`` if it does
        not answer)."""
        try:
            text = httpx.get(f"{self.url}/metrics", timeout=5).text
        except httpx.HTTPError:
            return None
        total = 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and labels.items() <= sample.labels.items():
                    total += sample.value
        return int(total)

    def samples_ingested(self) -> int | None:
        """``eams_extender_telemetry_samples_total`` read from its ``/metrics`` (``None`` if it
        does not answer)."""
        return self._metric("eams_extender_telemetry_samples_total")

    def answered(self, path: str) -> int | None:
        """Requests it answered on ``path`` (``/prioritize``), every status: the count of
        ``eams_extender_request_duration_seconds`` (``None`` if it does not answer)."""
        return self._metric("eams_extender_request_duration_seconds_count", path=path)

    def post_nodes(self, objects: list[dict]) -> None:
        """``POST /nodes`` with a v1 NodeList of ``objects`` (the extender is run without a
        watch: no API server runs here).

        Raises
        ------
        DemoError
            Not accepted (names the status and the extender's reason).
        """
        self._post_list("/nodes", "NodeList", objects)

    def post_pods(self, objects: list[dict]) -> None:
        """``POST /pending`` with a v1 PodList of ``objects``: the twin of the extender's pod
        watch, so bound pods hold capacity and join its decision record's outcomes.

        Raises
        ------
        DemoError
            Not accepted (names the status and the extender's reason).
        """
        self._post_list("/pending", "PodList", objects)

    def _post_list(self, path: str, kind: str, objects: list[dict]) -> None:
        body = {"apiVersion": "v1", "kind": kind, "metadata": {}, "items": objects}
        try:
            response = httpx.post(f"{self.url}{path}", json=body, timeout=10)
        except httpx.HTTPError as exc:
            raise DemoError(f"the extender at {self.url} took no {kind}: {exc}") from exc
        if response.status_code != 202:
            raise DemoError(
                f"the extender at {self.url} refused the {kind}: {response.status_code} "
                f"{response.text[:200]}"
            )

    def stop(self) -> None:
        """Shut down, join and release the socket (idempotent)."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._socket.close()


class TimedAgent(Agent):
    """The product's agent, noting when each of its samples was taken and, on the PDU owner,
    when each meter reading was measured (monotonic s): how late the live loop's samples and
    readings came (:mod:`eams.demo.lag`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ticked_s: list[float] = []
        self.metered_s: list[float] = []
        if self.poller is not None:
            self.poller.on_reading = self._note_reading

    def _note_reading(self, reading: TimedReading) -> None:
        self.metered_s.append(reading.measured_mono_ns / 1e9)

    def tick(self) -> None:
        """Note the time, then :meth:`Agent.tick`."""
        self.ticked_s.append(time.monotonic())
        super().tick()


class Agents:
    """One in-process agent per node for one run, writing ``telemetry_dir/NODE.jsonl``.

    A context manager: entering starts every agent, leaving stops them all.

    Parameters
    ----------
    testbed : Testbed
    calibrations_dir : Path
        Holds ``NODE.json`` for every node.
    telemetry_dir : Path
        This run's JSONL files (and the agents' spools under ``spool/``).
    extender_url : str
    period_s : float
        Sample period of every agent and of the owner's meter poll.

    Raises
    ------
    DemoError
        An agent cannot be set up (its configuration, calibration file or spool directory is
        refused; e.g. another agent holds that spool): names the node, with the agent's own
        message. The agents already set up are closed first.
    """

    def __init__(
        self,
        testbed: Testbed,
        calibrations_dir: Path,
        telemetry_dir: Path,
        extender_url: str,
        period_s: float,
    ) -> None:
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._meter_url = testbed.url
        self.period_s = period_s
        self.agents: list[TimedAgent] = []
        # the PDU owner publishes every node's metered power: each with that node's own cap
        caps = {n.spec.name: n.spec.power_cap_w for n in testbed.nodes}
        for index, node in enumerate(testbed.nodes):
            name = node.spec.name
            data = {
                "node": name,
                "power_cap_w": caps[name],
                "calibration": str(calibrations_dir / f"{name}.json"),
                "sample_period_s": period_s,
                "sinks": [
                    {"type": "jsonl", "path": str(telemetry_dir / f"{name}.jsonl")},
                    {"type": "extender", "url": extender_url, "max_backoff_s": 1.0},
                ],
                "spool": {
                    "dir": str(telemetry_dir / "spool" / name),
                    "max_points": 100_000,
                    "policy": "drop_oldest",
                },
                "metrics": {"host": HOST, "port": 0},
            }
            if index == 0:  # the PDU owner
                data["meter"] = {
                    "url": testbed.url,
                    "driver": DRIVER,
                    "stale_after_s": 3 * period_s,
                }
                data["outlets"] = {
                    i + 1: {"node": n, "power_cap_w": cap}
                    for i, (n, cap) in enumerate(caps.items())
                }
            try:
                config = parse_config(data, telemetry_dir, f"agent {name}")
                self.agents.append(TimedAgent(config, read_cpu=node.cpu_times))
            except BaseException as exc:
                self.stop()  # closes the agents set up so far (the owner's meter among them)
                if isinstance(exc, EamsError):
                    raise DemoError(f"the agent of {name} did not start: {exc}") from exc
                raise

    def start(self) -> Agents:
        """Run every agent in its own thread."""
        for agent in self.agents:
            thread = threading.Thread(
                target=agent.run, args=(self._stop,), name=f"eams-demo-agent-{agent.config.node}"
            )
            thread.start()
            self._threads.append(thread)
        return self

    def wait_metered(self, timeout_s: float) -> None:
        """Return once the PDU owner has its first meter reading.

        Raises
        ------
        DemoError
            None within ``timeout_s``; names the agent and the meter URL.
        """
        poller = self.agents[0].poller
        deadline = time.monotonic() + timeout_s
        while poller is not None and poller.latest() is None:
            if time.monotonic() > deadline:
                raise DemoError(
                    f"the PDU owner agent {self.agents[0].config.node} read no meter at "
                    f"{self._meter_url} within {timeout_s:g} s"
                )
            time.sleep(0.05)

    def sample_times(self, since_s: float, until_s: float) -> list[list[float]]:
        """Each agent's sample times (monotonic s) from ``since_s`` to ``until_s``."""
        return [[t for t in a.ticked_s if since_s <= t <= until_s] for a in self.agents]

    def published_after(self, since_s: float) -> bool:
        """Whether the PDU owner has published a meter reading taken wholly after ``since_s``
        (monotonic s): two readings have returned since (the poller reads one at a time, so
        the second began after the first returned) and the owner's agent ticked after the
        second (a tick publishes the newest reading, stamped before it); and whether its
        newest reading returned less than a period ago (a window closed now ends on a
        reading, not inside a slow one still under way)."""
        owner = self.agents[0]
        after = [t for t in list(owner.metered_s) if t > since_s]
        ticked = list(owner.ticked_s)
        return (
            len(after) >= 2
            and bool(ticked)
            and ticked[-1] > after[1]
            and time.monotonic() - after[-1] < self.period_s
        )

    def meter_times(self, since_s: float, until_s: float) -> list[float]:
        """When each of the PDU owner's meter readings from ``since_s`` to ``until_s`` was
        measured (monotonic s; every outlet is read at once)."""
        return [t for t in self.agents[0].metered_s if since_s <= t <= until_s]

    def stop(self) -> None:
        """Stop every agent; each flushes its sinks and closes its spool (idempotent).

        An agent that was set up but never started is closed here (its meter, spool lock and
        sinks released).
        """
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=15)
        while len(self.agents) > len(self._threads):  # set up, never run
            self.agents.pop().close()

    def __enter__(self) -> Agents:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
