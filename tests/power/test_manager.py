"""The manager loop against a small scripted world that implements the three ports (the ports
are the manager's own protocols: these tests check the loop's order and phases; the live
adapters are tested against the stand-in API, the PDU simulator and sshd elsewhere)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from eams.actuators.transitions import Transition
from eams.errors import EamsError
from eams.scheduler.power.manager import ManagerConfig, PowerManager
from eams.scheduler.power.policy import Plan, PolicyConfig, PowerPolicy
from eams.scheduler.power.policy_fleet import FleetState
from eams.scheduler.power.policy_plan import PolicyMemory
from eams.scheduler.power.ports import Observation, guess_state
from tests.power.conftest import node, pod


@dataclass
class Host:
    """One node of the scripted world: up or down, Ready, the agent's last report, the
    kubelet's last heartbeat (``kubelet_alive=False``: up and Ready as last reported, but no
    heartbeat: a stale Ready)."""

    name: str
    up: bool = True
    pods: tuple[float, ...] = ()
    ready: bool = True
    seen_s: float = 0.0
    cordoned: bool = False
    tainted: bool = False
    wakes_ok: bool = True
    sleeps_ok: bool = True
    boot_s: float = 5.0
    woken_at_s: float | None = None
    heartbeat_s: float = 0.0
    kubelet_alive: bool = True


@dataclass
class World:
    """Implements FleetObserver, NodeMarker and Actuator; ``calls`` lists every call in order."""

    hosts: dict[str, Host]
    pending: list = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)
    now_s: float = 0.0

    def observe(self, now_s: float) -> Observation:
        self.now_s = now_s
        for h in self.hosts.values():
            if h.woken_at_s is not None and now_s >= h.woken_at_s + h.boot_s and h.wakes_ok:
                h.up, h.ready, h.woken_at_s = True, True, None
            if h.up:
                h.seen_s = now_s
                if h.kubelet_alive:
                    h.heartbeat_s = now_s
        views = [
            node(h.name, pods=h.pods, empty_since_s=None if h.pods else 0.0)
            for h in self.hosts.values()
        ]
        fleet = FleetState.from_views(now_s, views, self.pending)
        ready = np.array([h.ready for h in self.hosts.values()])
        marked = np.array([h.tainted for h in self.hosts.values()])
        seen = np.array([h.seen_s for h in self.hosts.values()])
        heartbeat = np.array([h.heartbeat_s for h in self.hosts.values()])
        fleet = fleet.__class__(**{**fleet.__dict__, "state": guess_state(ready, marked)})
        return Observation(fleet, ready, seen, marked, heartbeat)

    def mark_asleep(self, node_name: str, reason: str) -> None:
        self.calls.append(("mark", node_name))
        self.hosts[node_name].cordoned = self.hosts[node_name].tainted = True

    def annotate(self, node_name: str, state: str, reason: str) -> None:
        self.calls.append((f"annotate:{state}", node_name))

    def release(self, node_name: str, reason: str) -> None:
        h = self.hosts[node_name]
        self.calls.append(("release", node_name))
        assert h.ready and h.up, "released before Ready"
        h.cordoned = h.tainted = False

    def _t(self, node_name: str, to: str, result: str = "ok") -> Transition:
        return Transition(node_name, to, "wol", result, "test", "", ("step",))

    def sleep(self, node_name: str, reason: str) -> Transition:
        h = self.hosts[node_name]
        self.calls.append(("sleep", node_name))
        if not (h.cordoned and h.tainted) or h.pods:
            return self._t(node_name, "suspended", "refused")
        if h.sleeps_ok:
            h.up = h.ready = False
        return self._t(node_name, "suspended")

    def wake(self, node_name: str, reason: str) -> Transition:
        self.calls.append(("wake", node_name))
        self.hosts[node_name].woken_at_s = self.now_s
        return self._t(node_name, "running")

    def restart_agent(self, node_name: str) -> Transition:
        self.calls.append(("restart", node_name))
        return self._t(node_name, "running")

    def sleep_state(self, node_name: str) -> str:
        return "suspended"


class Records:
    def __init__(self) -> None:
        self.items: list = []

    def submit(self, record) -> bool:
        self.items.append(record)
        return True


CONFIG = PolicyConfig(reserve_cores=0.0, min_awake=1, idle_before_sleep_s=10.0, min_awake_s=0.0)


def manager(world: World, mode: str, records: Records | None = None) -> PowerManager:
    return PowerManager(
        PowerPolicy(CONFIG), world, world, world, records, mode, ManagerConfig(agent_silent_s=3.0)
    )


def test_shadow_mode_records_once_and_changes_nothing() -> None:
    world = World({"a": Host("a", pods=(1.0,)), "b": Host("b")})
    records = Records()
    m = manager(world, "shadow", records)
    for t in (100.0, 101.0, 102.0):
        plan = m.step(t)
        assert [(d.action.value, d.node) for d in plan.decisions] == [("sleep", "b")]
    assert world.calls == []  # nothing marked, nothing switched
    assert [(r.node, r.to_state, r.mode, r.result) for r in records.items] == [
        ("b", "suspended", "shadow", None)
    ]
    assert m.phases["b"].state == 0


def test_active_marks_before_the_sleep_and_releases_only_once_back() -> None:
    world = World({"a": Host("a", pods=(1.0,)), "b": Host("b")})
    records = Records()
    m = manager(world, "active", records)
    m.step(100.0)
    assert world.calls == [("mark", "b"), ("sleep", "b")]
    m.step(104.0)  # agent silent ≥ 3 s: asleep
    assert m.phases["b"].state == 1 and ("annotate:asleep", "b") in world.calls
    world.pending = [pod("p", 4.0, since_s=104.0)]  # fits no awake node
    m.step(110.0)
    assert world.calls[-2:] == [("wake", "b"), ("annotate:waking", "b")]
    m.step(112.0)  # booting: still tainted
    assert world.hosts["b"].tainted and m.phases["b"].state == 2
    m.step(116.0)  # up, Ready, agent reports: released
    assert world.calls[-1] == ("release", "b") and not world.hosts["b"].tainted
    assert m.phases["b"].state == 0
    assert [r.reason for r in records.items][-1] == "re-registered"


def test_a_ready_condition_older_than_the_wake_does_not_release_the_node() -> None:
    """Issue 31: a node asleep for less than the node-monitor grace period still reads
    ``Ready=True`` (the heartbeat from before the sleep); its agent answering is not enough."""
    world = World({"a": Host("a", pods=(1.0,)), "b": Host("b")})
    m = manager(world, "active")
    m.step(100.0)
    m.step(104.0)  # asleep
    world.hosts["b"].ready = True  # the controller has not marked it Unknown yet
    world.hosts["b"].kubelet_alive = False  # the agent comes back, the kubelet does not
    world.pending = [pod("p", 4.0, since_s=104.0)]
    m.step(110.0)  # wake sent
    for t in (116.0, 120.0, 124.0):  # (the wake times out at 130 s)
        m.step(t)
        assert ("release", "b") not in world.calls and m.phases["b"].state == 2
    world.hosts["b"].kubelet_alive = True  # a fresh heartbeat: now it counts
    m.step(126.0)
    assert world.calls[-1] == ("release", "b") and m.phases["b"].state == 0


def test_a_wake_that_never_gets_ready_makes_the_node_suspect_and_wakes_the_next() -> None:
    hosts = {n: Host(n, up=False, ready=False, tainted=True) for n in ("b", "c")}
    hosts["a"] = Host("a", pods=(4.0,))
    hosts["b"].wakes_ok = False
    world = World(hosts)
    world.pending = [pod("p", 4.0, since_s=0.0)]
    m = manager(world, "active")
    m.step(10.0)
    woken = [n for c, n in world.calls if c == "wake"]
    assert len(woken) == 1
    first = woken[0]
    world.hosts[first].wakes_ok = False
    other = "c" if first == "b" else "b"
    world.hosts[other].wakes_ok = True
    t = 10.0
    while len([c for c in world.calls if c[0] == "wake"]) < 2 and t < 200.0:
        t += 5.0
        m.step(t)
    assert m.phases[first].suspect and m.phases[first].failed_wakes == 1
    assert [n for c, n in world.calls if c == "wake"] == [first, other]
    assert ("annotate:asleep-suspect", first) in world.calls
    assert m.metrics.failed_wakes.labels(first)._value.get() == 1


def test_never_sleeps_a_node_with_pods() -> None:
    world = World({"a": Host("a", pods=(1.0,)), "b": Host("b", pods=(0.5,))})
    m = manager(world, "active")
    for t in range(100, 400, 50):
        m.step(float(t))
    assert world.calls == []


def test_an_unobservable_fleet_decides_nothing_and_a_failed_release_is_retried() -> None:
    world = World({"a": Host("a", pods=(1.0,)), "b": Host("b", tainted=True, cordoned=True)})
    m = manager(world, "active")

    def blind(now_s: float):
        raise EamsError("the Kubernetes API did not answer")

    seeing, world.observe = world.observe, blind  # type: ignore[method-assign]
    assert m.step(1.0).decisions == () and m.metrics.observe_errors._value.get() == 1
    world.observe = seeing  # type: ignore[method-assign]
    m.step(2.0)  # b: marked at start → asleep until it reports after that
    assert world.calls == [] and m.phases["b"].state == 1
    m.step(3.0)  # Ready and reporting again → back, released
    assert world.calls == [("release", "b")] and not world.hosts["b"].tainted
    world.hosts["b"].tainted = True  # as if that release had not reached the API
    m.step(4.0)
    assert world.calls == [("release", "b"), ("release", "b")] and m.phases["b"].state == 0


def test_a_suspend_timeout_is_sound_when_the_agent_went_silent_and_suspect_when_it_did_not() -> (
    None
):
    world = World({"a": Host("a", pods=(1.0,)), "b": Host("b"), "c": Host("c", sleeps_ok=False)})
    m = PowerManager(
        PowerPolicy(CONFIG.model_copy(update={"min_awake": 1})), world, world, world,
        mode="active", config=ManagerConfig(agent_silent_s=100.0),  # confirms too late
    )  # fmt: skip
    m.step(100.0)
    assert sorted(c for c in world.calls if c[0] == "sleep") == [("sleep", "b"), ("sleep", "c")]
    m.step(110.0)  # past 2 × the measured 3 s suspend: both time out
    assert m.phases["b"].state == 1 and not m.phases["b"].suspect  # silent: it went down
    assert m.phases["c"].state == 1 and m.phases["c"].suspect  # still reporting
    m.step(111.0)  # c reports after the timeout: awake again and released (then, still idle,
    # marked and told to sleep once more)
    assert world.calls[-3:] == [("release", "c"), ("mark", "c"), ("sleep", "c")]
    assert ("release", "b") not in world.calls


class _BusyHost:
    """A stop event on a fake clock: each step takes ``step_s``, each wait wakes ``late_s``
    late, and the run stops after ``steps`` steps."""

    def __init__(self, step_s: float, late_s: float, steps: int) -> None:
        self.now, self.step_s, self.late_s, self.steps = 0.0, step_s, late_s, steps
        self.began: list[float] = []

    def clock(self) -> float:
        return self.now

    def is_set(self) -> bool:
        return len(self.began) >= self.steps

    def wait(self, seconds: float) -> bool:
        self.now += max(seconds, 0.0) + self.late_s
        return self.is_set()

    def step(self, now_s: float) -> Plan:
        self.began.append(self.now)
        self.now += self.step_s
        return Plan((), (), 0, None, PolicyMemory())


def test_the_managers_ticks_keep_to_their_grid_on_a_busy_host() -> None:
    """Steps of 0.3 s every 1 s, each wait waking 0.1 s late: a wait of the whole interval
    after each step began tick 19 at 19 × 1.4 = 26.6 s; on the grid, at 19.1 s."""
    host = _BusyHost(step_s=0.3, late_s=0.1, steps=20)
    PowerManager.run(host, host, 1.0, clock=host.clock, monotonic=host.clock)  # type: ignore[arg-type]
    assert host.began[-1] == pytest.approx(19.1)
    long = _BusyHost(step_s=2.5, late_s=0.0, steps=4)  # a step longer than two intervals
    PowerManager.run(long, long, 1.0, clock=long.clock, monotonic=long.clock)  # type: ignore[arg-type]
    assert long.began == pytest.approx([0.0, 3.0, 6.0, 9.0])  # the grid's next point, no burst
