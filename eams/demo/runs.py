"""Demo stage 3: the three live runs of each offered load, metered by the agents.

Per band ρ (:data:`eams.demo.workload.RHO`), the same trace is placed live four times
(:data:`RUNS`): ``default`` (kube-scheduler's LeastAllocated, no extender, no power manager),
``default+pm`` (the same with the power manager), ``eams+pm-mgr`` (the live extender with its
market wakes off: the power manager decides the wakes alone) and ``eams+pm`` (the live
extender, its market deciding the wakes, and the power manager executing them). Every run
starts with the six nodes awake and empty, its own agents metering it (telemetry simulator →
SNMP → agent → JSONL and extender), and its window spans from the first arrival to the last
pod's end. Each EAMS run has its own live extender, recording into ``record/<band>/<run>``,
told of the node objects as the power manager changes them (``POST /nodes``: its node watch's
twin) and of the EAMS pods' bindings and ends (``POST /pending``, :mod:`eams.demo.record`);
its wake requests (:attr:`~eams.scheduler.extender.service.Extender.on_wake_request`) are
written on the emulated cluster's node as the ``eams.io/wake-request`` annotation, as the
extender's watch writes them on a real one, where the power manager reads them. The power
manager writes its decisions into ``record/<band>/<run>``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eams.calibrate.calfile import Calibration
from eams.demo.calibrate import measure_power_states_again
from eams.demo.cluster import EmulatedCluster
from eams.demo.errors import DemoError
from eams.demo.lag import frozen_heap, margin_s
from eams.demo.live import NO_EXTENDER, LiveLoop, LiveRun, extender_config
from eams.demo.power import FAILURES, demo_manager, failures
from eams.demo.services import Agents, ExtenderServer
from eams.demo.testbed import Testbed
from eams.demo.workload import demo_workload
from eams.kube.names import WAKE_REQUEST_ANNOTATION
from eams.kube.wakerequest import WakeRequest
from eams.scheduler.policies.base import Cluster, Workload
from eams.scheduler.record import Recorder, WriterSettings

RUNS = (
    ("default", "default", False),
    ("default+pm", "default", True),
    ("eams+pm-mgr", "eams", True),
    ("eams+pm", "eams", True),
)
"""(label, scheduler, power manager?): the baseline first, the candidate last. The EAMS runs
differ in the extender's market wakes only (:data:`MARKET_WAKES`)."""
MARKET_WAKES = {"eams+pm-mgr": False, "eams+pm": True}
"""Per EAMS run, whether its extender's market decides the wakes (``--market-wakes``)."""
RUN_S = {True: 6.0, False: 45.0}
"""Real seconds the trace's arrivals and work span (quick, full); queueing adds to it."""
REPEATS = {True: 1, False: 3}
"""Times each offered load's four runs are placed (quick, full): one run's saving moves by more
than its measurement's ± between runs, so the full demo states the mean of three and its
interval (:mod:`eams.demo.spread`)."""
PERIOD_S = {True: 0.25, False: 0.5}
"""Agent sample period and meter poll, and the power manager's tick (quick, full), s."""
WARMUP_PERIODS = 3
"""Agent periods before and after the run's window, so its edges hold samples."""
METER_START_TIMEOUT_S = 20.0
RESTORE_TIMEOUT_S = 30.0
"""How long the nodes may take to be running again between runs, s."""


@dataclass
class Band:
    """The runs of one offered load.

    Attributes
    ----------
    rho : float
    source : str
        Where the workload came from (trace, pods, ρ).
    speedup : float
        Trace seconds per real second.
    runs : list of LiveRun
        In :data:`RUNS` order.
    extender_url : str
        The band's live extender of the ``eams+pm`` run.
    samples_ingested : int or None
        Telemetry samples the agents pushed to it (its ``/metrics``).
    repeat, repeats : int
        This is repeat ``repeat`` (from 1) of the ``repeats`` of this offered load.
    name : str
        Folder name of the band (``rho-0.8``; ``rho-0.8-repeat-2`` from the second repeat on).
    """

    rho: float
    source: str
    speedup: float
    runs: list[LiveRun]
    extender_url: str = ""
    samples_ingested: int | None = None
    repeat: int = 1
    repeats: int = 1

    @property
    def name(self) -> str:
        """``rho-<ρ>``, with ``-repeat-<k>`` from the second repeat on."""
        base = f"rho-{self.rho:g}"
        return base if self.repeat == 1 else f"{base}-repeat-{self.repeat}"

    def calibration_dir(self, root: Path) -> Path:
        """The calibration files this band ran on, ``root`` being the calibration stage's:
        ``root`` for the first repeat, ``root/<name>`` (``calibration/rho-0.8-repeat-2``) for
        the others, their power states measured again
        (:func:`~eams.demo.calibrate.measure_power_states_again`)."""
        return root if self.repeat == 1 else root / self.name

    @property
    def title(self) -> str:
        """``ρ = 0.8``, with ``, repeat 2 of 3`` when the band is repeated."""
        base = f"ρ = {self.rho:g}"
        return base if self.repeats == 1 else f"{base}, repeat {self.repeat} of {self.repeats}"

    def run(self, label: str) -> LiveRun:
        """The run labelled ``label``."""
        return next(r for r in self.runs if r.label == label)


def speedup_for(workload: Workload, quick: bool) -> float:
    """Trace seconds per real second so that arrivals and work span :data:`RUN_S`."""
    span_s = float(np.max(workload.arrival_s + workload.duration_s))
    return span_s / RUN_S[quick]


def restore(testbed: Testbed) -> None:
    """Every outlet on and every node running again (between runs, outside any window).

    Raises
    ------
    DemoError
        A node is not running within :data:`RESTORE_TIMEOUT_S`.
    """
    sim = testbed.simulator
    for outlet in range(1, len(testbed.nodes) + 1):
        if sim.state(outlet).state != "on":
            sim.switch_outlet(outlet, "on")
    deadline = time.monotonic() + RESTORE_TIMEOUT_S
    for outlet, node in enumerate(testbed.nodes, start=1):
        while sim.state(outlet).node != "running":
            if time.monotonic() > deadline:
                raise DemoError(f"{node.spec.name} is not running again after the previous run")
            time.sleep(0.05)
        node.set_load(0.0)


class _QuietOffNodes(logging.Filter):
    """Drops the agent's warning that a switched-off node's /proc/stat cannot be read (a node
    that is off runs no agent; the demo's agents are threads that keep ticking)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "its OS does not run" not in record.getMessage()


async def _drive(
    live: LiveLoop,
    manager_for,
    period_s: float,
    timeout_s: float,
    metered: Callable[[float], bool],
):
    """Run ``live`` with the power manager of ``manager_for`` (or none) stepping in a worker
    thread; after the last pod, wait for a step in flight and for the nodes to settle. The
    heap made before the run (the manager's meter among it) is frozen for the run. The window
    closes once ``metered`` (:meth:`Agents.published_after`) says the meter read the nodes
    steady (:func:`close_window`)."""
    loop = asyncio.get_running_loop()
    step = actuator = failed = None
    busy = threading.Lock()
    if manager_for is not None:
        manager, actuator, marker = manager_for(lambda: loop.call_soon_threadsafe(live.requeue))

        def locked_step(now_s: float) -> None:
            with busy:
                manager.step(now_s)

        async def step(now_s: float) -> None:
            await asyncio.to_thread(locked_step, now_s)

    try:
        # no full collection stops the run (frozen_heap says why); its own collection's
        # pause is over a few agent periods before the window opens
        with frozen_heap():
            await asyncio.sleep(WARMUP_PERIODS * period_s)
            live.cluster.start()
            start_ns = time.time_ns()
            first_s, last_s = (float(live.workload.arrival_s[i]) / live.speedup for i in (0, -1))
            closer = loop.create_task(
                close_window(live.cluster.testbed, time.monotonic() + last_s, period_s, metered)
            )
            try:
                await live.run(step, period_s, timeout_s)
                window_end_ns = await closer
            finally:
                closer.cancel()
            await asyncio.to_thread(busy.acquire)  # a step in flight ends; no other starts
            await settle(live.cluster.testbed, period_s)
        if actuator is not None:
            failed = failures(manager, actuator, marker) | {"suspect_nodes": sorted(marker.suspect)}
        window_ns = (start_ns + int(first_s * 1e9), window_end_ns)
        return window_ns, (time.time_ns() - start_ns) / 1e9, actuator, failed
    finally:
        if actuator is not None:
            actuator.close()


SETTLE_TIMEOUT_S = 15.0
"""Longest a run's window waits, after its last pod, for a node still in transition."""


BLIND_S = 0.4
"""A pause between two polls of :func:`steady_for` longer than this (s) restarts its hold: a
transition lasts at least a shutdown (``NODE_POWER``: 0.5 s) or a boot (1 s), so none can
pass unseen within it."""


def _steady(testbed: Testbed) -> bool:
    """Every node running with its outlet on, or off at its outlet: none in transition."""
    states = [testbed.simulator.state(i) for i in range(1, len(testbed.nodes) + 1)]
    return all(s.state == "off" or s.node == "running" for s in states)


async def steady_for(
    testbed: Testbed, hold_s: float, metered: Callable[[float], bool] | None = None
) -> None:
    """Return once no node has been in transition for ``hold_s`` on end (polled every 50 ms),
    and, with ``metered``, once ``metered(since)`` says the PDU owner has published a reading
    taken wholly after the steady state began (monotonic ``since``); or
    :data:`SETTLE_TIMEOUT_S` + ``hold_s`` from now at the latest. A transition that starts
    during the hold (the manager keeps running: a wake, a suspend) starts the hold again, and
    so does a pause between two polls longer than :data:`BLIND_S` (the loop or the process
    stalled: a transition may have come and gone unseen)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S + hold_s
    steady_since: float | None = None
    polled: float | None = None
    while (now := time.monotonic()) < deadline:
        blind = polled is not None and now - polled > BLIND_S
        polled = now
        if not _steady(testbed):
            steady_since = None
        elif steady_since is None or blind:
            steady_since = now
        elif now - steady_since >= hold_s and (metered is None or metered(steady_since)):
            return
        await asyncio.sleep(0.05)


async def settle(testbed: Testbed, period_s: float) -> None:
    """Return once every node has been either running with its outlet on or off at its outlet
    for :data:`WARMUP_PERIODS` agent periods (so the meter has read it so): a run ends with the
    transitions its power manager started, at most :data:`SETTLE_TIMEOUT_S` after its last
    pod (:func:`steady_for`)."""
    await steady_for(testbed, WARMUP_PERIODS * period_s)


async def close_window(
    testbed: Testbed,
    due_s: float,
    period_s: float,
    metered: Callable[[float], bool] | None = None,
) -> int:
    """When the run's arrival window closes (epoch ns): after its last arrival (``due_s``,
    monotonic s), once no node has been in transition (its agent silent while its OS is down)
    for :data:`WARMUP_PERIODS` agent periods (:func:`steady_for`), in every run alike, so that
    the window's edge holds every node's sample (an agent's first after a boot, a 0 W reading
    after an outlet off): the wall-power check refuses a window whose edge a node's samples miss
    by more than a tenth of it. (Steady once and then a fixed wait was not enough: a wake the
    market asked for started inside the wait, and the node's agent was silent at the edge.)
    With ``metered`` (:meth:`~eams.demo.services.Agents.published_after`) it also waits for
    the PDU owner to publish a reading of that steady state: a node slept just before had no
    metered power from its soft-off (1 W, under the APC floor) until the first reading of its
    outlet off, and a read under way when the outlet opened, then a slow one, left it without
    any at the window's end (CI: ``mini-3: no metered power in 4.6–5.7 s, at the end of the
    5.7 s window``)."""
    await asyncio.sleep(max(0.0, due_s - time.monotonic()))
    await steady_for(testbed, WARMUP_PERIODS * period_s, metered)
    return time.time_ns()


def live_run(
    testbed: Testbed,
    harness: Cluster,
    calibrations: list[Calibration],
    workload: Workload,
    speedup: float,
    run: tuple[str, str, bool],
    *,
    out_dir: Path,
    band: str,
    calibration_dir: Path,
    extender: ExtenderServer,
    quick: bool,
    tick: Callable[[float], None],
) -> LiveRun:
    """One run of :data:`RUNS` (module docstring); its telemetry in
    ``out_dir/telemetry/<band>/<label>``. ``calibrations`` and ``calibration_dir``: the band's
    (the manager's and the agents'). ``extender``: the run's own in an EAMS run (told of the
    nodes and writing its wake requests on them), else the one its agents push to.

    Raises
    ------
    DemoError
        The meter was not read, or pods did not end in time.
    """
    label, scheduler, with_pm = run
    restore(testbed)
    period_s = PERIOD_S[quick]
    cluster = EmulatedCluster(testbed, speedup, time.time)  # the power manager's clock
    config = extender_config(extender.url) if scheduler == "eams" else NO_EXTENDER
    outcomes = extender.post_pods if scheduler == "eams" else None
    live = LiveLoop(cluster, harness, workload, speedup, config, scheduler, outcomes)
    telemetry = out_dir / "telemetry" / band / label
    result = LiveRun(label, telemetry)
    recorder = None
    if with_pm:
        folder = out_dir / "record" / band / label
        recorder = Recorder(WriterSettings(folder=folder, prefix="power"))

    on_change = None
    if scheduler == "eams":
        on_change = tell_nodes(cluster, extender)

    def manager_for(on_release):
        return demo_manager(
            testbed, cluster, calibrations, live.pending_pods, on_release,
            quick=quick, period_s=period_s, recorder=recorder,
            **({} if on_change is None else {"on_change": on_change}),
        )  # fmt: skip

    asked = extender.answered("/prioritize") or 0
    timeout_s = 4 * RUN_S[quick] + 60
    try:
        with Agents(testbed, calibration_dir, telemetry, extender.url, period_s) as agents:
            agents.wait_metered(METER_START_TIMEOUT_S)
            time.sleep(WARMUP_PERIODS * period_s)
            live.on_progress = tick
            (result.start_ns, result.end_ns), result.run_s, actuator, failed = asyncio.run(
                _drive(
                    live,
                    manager_for if with_pm else None,
                    period_s,
                    timeout_s,
                    agents.published_after,
                )
            )
            for times in agents.sample_times(live.started_s, time.monotonic()):
                live.lag.periodic("sample", times, period_s)
            live.lag.periodic(
                "meter", agents.meter_times(live.started_s, time.monotonic()), period_s
            )
            time.sleep(WARMUP_PERIODS * period_s)
    finally:
        if recorder is not None:
            recorder.close()
        if scheduler == "eams":
            extender.extender.on_wake_request = None
    live.result(result)
    result.lag = live.lag.summary(margin_s(period_s), speedup)
    if actuator is not None and failed is not None:
        result.suspect_nodes = failed.pop("suspect_nodes")
        result.transitions = dict(actuator.counts) | failed
    else:
        result.transitions = {"sleep": 0, "wake": 0, "refused": 0} | dict.fromkeys(FAILURES, 0)
    if scheduler == "eams":
        result.extender_prioritize = (extender.answered("/prioritize") or 0) - asked
    return result


def tell_nodes(cluster: EmulatedCluster, extender: ExtenderServer) -> Callable[[str], None]:
    """Wire ``extender`` to ``cluster`` for one EAMS run, as its node watch and wake writer
    are on a real cluster: it learns every node object now, its wake requests are written on
    the node (``eams.io/wake-request``, :meth:`EmulatedCluster.annotate`, a dict update under
    the cluster's lock: it does not block the extender's event loop); returns the marker's
    ``on_change`` (node name → its object to the extender, ``POST /nodes``).

    Raises
    ------
    DemoError
        The extender refused the nodes.
    """
    extender.post_nodes(list(cluster.objects().values()))

    def write(request: WakeRequest) -> None:
        value = request.annotation()
        if value is None:  # the request is over
            cluster.unannotate(request.node, WAKE_REQUEST_ANNOTATION)
        else:
            cluster.annotate(request.node, {WAKE_REQUEST_ANNOTATION: value})

    extender.extender.on_wake_request = write

    def changed(node: str) -> None:
        extender.post_nodes([cluster.objects()[node]])

    return changed


def bands(
    testbed: Testbed,
    harness: Cluster,
    calibrations: list[Calibration],
    out_dir: Path,
    quick: bool,
    rhos: tuple[float, ...],
    repeats: int,
    on_run: Callable[[str, LiveRun], None],
    progress: Callable[[str], Callable[[float], None]],
    on_extender: Callable[[str], None] = lambda url: None,
    on_power_states: Callable[[Band, list[Calibration]], None] = lambda band, cals: None,
) -> list[Band]:
    """Every band's four runs, ``repeats`` times each: a fresh extender per repeat and, from
    the second on, the power states measured again (:meth:`Band.calibration_dir`).

    Parameters
    ----------
    rhos : tuple of float
        The offered loads, the report's first.
    repeats : int, ≥ 1
        How many times each offered load's four runs are placed (:mod:`eams.demo.spread`).
    on_run : callable
        Called with (:attr:`Band.title`, run) after each run (the terminal's line).
    progress : callable
        Run description → the progress callback of that run (fraction of pods ended).
    on_extender : callable
        Called with a band's extender URL once it listens.
    on_power_states : callable
        Called with a repeat (from the second) and its calibrations once they are measured.
    """
    logging.getLogger("eams.agent.sampler").addFilter(_QuietOffNodes())
    # the power actions' transition lines (and the manager's) go to a log beside the record,
    # not to the terminal: a refusal (a pod bound between a decision and its action) is the
    # safety rules at work, counted in the summary
    log_path = out_dir / "record" / "power.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    power_log = logging.getLogger("eams.power")
    power_log.addHandler(handler)
    power_log.setLevel(logging.INFO)
    power_log.propagate = False
    try:
        return _bands(testbed, harness, calibrations, out_dir, quick, rhos, repeats, on_run,
                      progress, on_extender, on_power_states)  # fmt: skip
    finally:
        power_log.removeHandler(handler)
        handler.close()


def record_dir(out_dir: Path, band: str) -> Path:
    """The band's EAMS run's record folder: the extender's, the power manager's and the
    demo's energy lines."""
    return out_dir / "record" / band / "eams+pm"


def _bands(testbed, harness, calibrations, out_dir, quick, rhos, repeats, on_run, progress,
           on_extender, on_power_states):  # fmt: skip
    out = []
    for rho in rhos:
        workload, source = demo_workload(harness, quick, rho)
        for k in range(1, repeats + 1):
            band = Band(rho, source, speedup_for(workload, quick), [], repeat=k, repeats=repeats)
            own = calibrations
            if k > 1:
                restore(testbed)  # every node running and idle, as the measurement needs
                folder = band.calibration_dir(out_dir / "calibration")
                own = measure_power_states_again(testbed, calibrations, folder)
                on_power_states(band, own)
            out.append(_band(testbed, harness, own, out_dir, quick, workload, on_run, progress,
                             on_extender, band))  # fmt: skip
    return out


def _band(testbed, harness, calibrations, out_dir, quick, workload, on_run, progress, on_extender,
          band):  # fmt: skip
    folder = band.calibration_dir(out_dir / "calibration")
    with ExitStack() as stack:
        extenders = {
            label: stack.enter_context(
                ExtenderServer(
                    folder, record=out_dir / "record" / band.name / label,
                    period_s=PERIOD_S[quick], market_wakes=wakes,
                ).start()
            )  # stopped on leaving: its record closed, every line written
            for label, wakes in MARKET_WAKES.items()
        }  # fmt: skip
        main = extenders["eams+pm"]
        band.extender_url = main.url
        on_extender(main.url)
        for run in RUNS:
            done = live_run(
                testbed, harness, calibrations, workload, band.speedup, run,
                out_dir=out_dir, band=band.name, calibration_dir=folder,
                extender=extenders.get(run[0], main), quick=quick,
                tick=progress(f"{band.title}: run {run[0]}"),
            )  # fmt: skip
            band.runs.append(done)
            on_run(band.title, done)
        band.samples_ingested = main.samples_ingested()
    return band
