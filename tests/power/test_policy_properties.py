"""Properties of the power policy on random fleets (hypothesis): never sleeps a node with pods,
a role node or one a pending pod fits; never below ``min_awake``; acts only on nodes in the
right state; keeps to the rate limits; is deterministic; wakes within its bound."""

from dataclasses import replace

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from eams.scheduler.power.policy import PolicyConfig, PowerPolicy
from eams.scheduler.power.policy_fleet import FleetState, PowerState
from eams.scheduler.power.policy_plan import Action, Reason
from tests.power.conftest import fleet, node, pod

NOW_S = 10_000.0
times = st.floats(0.0, NOW_S)


@st.composite
def node_views(draw, name: str):
    state = draw(st.sampled_from(list(PowerState)))
    pods = ()
    if state is PowerState.AWAKE:
        pods = tuple(draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), max_size=3)))
    p_idle_w = draw(st.sampled_from([5.0, 10.0, 60.0]))
    changes = {
        "allocatable_cores": draw(st.sampled_from([2.0, 4.0, 8.0])),
        "speed": draw(st.sampled_from([0.5, 1.0, 1.5])),
        "p_idle_w": p_idle_w,
        "p_max_w": 3 * p_idle_w,
        "state_since_s": draw(times),
        "last_wake_s": draw(st.none() | times),
        "last_sleep_s": draw(st.none() | times),
        "suspect": draw(st.booleans()),
        "failed_wakes": draw(st.integers(0, 3)),
        "roles": draw(st.sampled_from([frozenset(), frozenset({"k3s-server"})])),
        "wake_energy_j": draw(st.sampled_from([None, 300.0, 3000.0])),
    }
    if not pods:
        changes["empty_since_s"] = draw(times)
    return node(name, state, pods, **changes)


@st.composite
def fleets(draw):
    n = draw(st.integers(1, 10))
    nodes = [draw(node_views(f"n{i}")) for i in range(n)]
    names = [v.name for v in nodes]
    pending = [
        pod(
            f"p{j}",
            draw(st.sampled_from([0.5, 2.0, 4.0, 16.0])),
            draw(times),
            runtime_ref_s=draw(st.none() | st.floats(10.0, 7200.0)),
            eligible_nodes=draw(st.none() | st.sets(st.sampled_from(names)).map(frozenset)),
        )
        for j in range(draw(st.integers(0, 4)))
    ]
    return fleet(NOW_S, nodes, pending)


configs = st.builds(
    PolicyConfig,
    min_awake=st.integers(0, 3),
    reserve_cores=st.none() | st.sampled_from([0.0, 2.0, 8.0]),
    suspend_rate_per_min=st.integers(1, 5),
    resume_rate_per_min=st.integers(1, 5),
    idle_before_sleep_s=st.sampled_from([0.0, 120.0]),
    min_awake_s=st.sampled_from([0.0, 300.0]),
)


def _fits_some_pending(state: FleetState) -> np.ndarray:
    pods = state.pending
    eligible = pods.eligible[pods.profile] & (pods.cores[:, None] <= state.cores[None, :])
    return eligible.any(axis=0)


@settings(max_examples=300, deadline=None)
@given(state=fleets(), config=configs)
def test_invariants_of_every_plan(state: FleetState, config: PolicyConfig) -> None:
    plan = PowerPolicy(config).decide(state)
    again = PowerPolicy(config).decide(state)
    assert [d.line() for d in plan.decisions] == [d.line() for d in again.decisions]
    assert plan.next_check_s == again.next_check_s
    assert plan.next_check_s is None or plan.next_check_s > state.now_s
    wanted = _fits_some_pending(state)
    slept = [d.index for d in plan.decisions if d.action is Action.SLEEP]
    woken = [d.index for d in plan.decisions if d.action is Action.WAKE]
    failed = [d.index for d in plan.decisions if d.action.value.endswith("-failed")]
    for n in slept:
        assert state.pods[n] == 0, "slept a node with pods"
        assert state.state[n] == PowerState.AWAKE and not state.no_sleep[n]
        assert not wanted[n], "slept a node a pending pod fits"
        assert np.isfinite(state.wake_energy_j[n]), "slept a node with no measured wake"
    for n in woken:
        assert state.state[n] == PowerState.ASLEEP or n in failed
    for n in failed:
        assert state.state[n] in (PowerState.WAKING, PowerState.SUSPENDING)
    assert len(set(slept)) == len(slept) and len(set(woken)) == len(woken)
    assert not set(slept) & set(woken)
    awake_before = int(np.count_nonzero(state.state == PowerState.AWAKE))
    if slept:
        assert awake_before - len(slept) >= config.min_awake, "slept below min_awake"
    window = state.now_s - 60.0
    assert len(slept) + int(np.count_nonzero(state.last_sleep_s > window)) <= max(
        config.suspend_rate_per_min, int(np.count_nonzero(state.last_sleep_s > window))
    )
    assert len(woken) + int(np.count_nonzero(state.last_wake_s > window)) <= max(
        config.resume_rate_per_min, int(np.count_nonzero(state.last_wake_s > window))
    )


@settings(max_examples=200, deadline=None)
@given(
    wake_after_s=st.floats(0.0, 120.0),
    since_s=st.floats(0.0, 5000.0),
    cores=st.sampled_from([0.5, 3.0, 4.0]),
    asleep=st.integers(1, 5),
)
def test_a_pod_that_fits_no_awake_node_gets_a_wake_within_its_bound(
    wake_after_s: float, since_s: float, cores: float, asleep: int
) -> None:
    """Asked at the instants the policy names (``next_check_s``), the wake comes exactly
    ``wake_after_s`` after the pod began to pend."""
    config = PolicyConfig(wake_after_s=wake_after_s, reserve_cores=0.0, min_awake=1)
    nodes = [node("busy", pods=(4.0,))]
    nodes += [node(f"s{i}", PowerState.ASLEEP, state_since_s=0.0) for i in range(asleep)]
    pending = [pod("p", cores, since_s)]
    policy, now, memory = PowerPolicy(config), since_s, None
    for _ in range(10):
        plan = policy.decide(fleet(now, nodes, pending), memory)
        memory = plan.memory
        wakes = [d for d in plan.decisions if d.action is Action.WAKE]
        if wakes:
            break
        assert plan.next_check_s is not None
        now = plan.next_check_s
    assert len(wakes) == 1 and wakes[0].pods == ("p",)
    assert now <= since_s + wake_after_s + 1e-6


@st.composite
def runs(draw):
    """A fleet, a config, and a sequence of steps: the time advanced, each node's pods if it is
    awake (a node not awake keeps none), the pending pods, and whether each wake will fail."""
    n = draw(st.integers(2, 8))
    config = PolicyConfig(
        min_awake=draw(st.integers(0, 3)),
        reserve_cores=draw(st.none() | st.sampled_from([0.0, 4.0])),
        idle_before_sleep_s=draw(st.sampled_from([0.0, 120.0])),
        min_awake_s=draw(st.sampled_from([0.0, 300.0])),
    )
    load = st.lists(st.sampled_from([0.5, 1.0, 2.0]), max_size=2).map(tuple)
    steps = [
        {
            "dt_s": draw(st.floats(1.0, 400.0)),
            "pods": [draw(load) for _ in range(n)],
            "pending": draw(st.lists(st.sampled_from([1.0, 4.0]), max_size=2)),
            "wake_fails": draw(st.booleans()),
        }
        for _ in range(draw(st.integers(5, 15)))
    ]
    return n, config, steps


def _step(dt_s: float, n: int, pending=(), wake_fails=False, pods=None) -> dict:
    """One step of :func:`runs`, every node empty unless ``pods`` says otherwise."""
    pods = [()] * n if pods is None else pods
    return {"dt_s": dt_s, "pods": pods, "pending": list(pending), "wake_fails": wake_fails}


# Counterexamples of the rule as first stated (no suspect woken while any sound node is
# asleep): the nodes slept within cooldown_s, a failed wake's node past its retry backoff takes
# the reserve wake — as the policy's step 5 says.
_FLOOR = PolicyConfig(min_awake=0, idle_before_sleep_s=0.0, min_awake_s=0.0)
_TWO_WAKES_THEN_A_RESERVE_ONE = (
    5,
    _FLOOR,
    [_step(1.0, 5)] * 6
    + [_step(30.0, 5), _step(3.0, 5, [1.0], wake_fails=True), _step(242.0, 5, [1.0, 4.0])]
    + [_step(1.0, 5)] * 3
    + [_step(10.0, 5), _step(45.0, 5, [1.0, 4.0])],
)
_A_PENDING_WAKE_THEN_A_RESERVE_ONE = (
    4,
    _FLOOR,
    [
        _step(1.0, 4, [4.0]),
        _step(35.0, 4, pods=[(), (0.5,), (), ()]),
        _step(120.0, 4, [1.0, 1.0], wake_fails=True, pods=[(), (0.5, 2.0), (), ()]),
        _step(297.0, 4),
        _step(1.0, 4),
        _step(1.0, 4),
        _step(1.0, 4, [4.0], pods=[(0.5,), (), (), ()]),
    ],
)


def _would_do(view, reason: Reason, now: float, config: PolicyConfig) -> bool:
    """Whether the sound asleep node ``view`` is a candidate for a wake with ``reason`` (the
    policy's docstring): for a pending pod any node (every pod here fits every node); for a
    reserve or ``min_awake`` wake one not within ``cooldown_s`` of its sleep."""
    if reason in (Reason.RESERVE, Reason.MIN_AWAKE):
        return view.last_sleep_s is None or now - view.last_sleep_s >= config.cooldown_s - 1e-6
    return True


@settings(max_examples=100, deadline=None)
@given(run=runs())
@example(run=_TWO_WAKES_THEN_A_RESERVE_ONE)
@example(run=_A_PENDING_WAKE_THEN_A_RESERVE_ONE)
def test_over_a_run_never_below_min_awake_never_a_node_with_pods_and_failed_wakes_move_on(
    run,
) -> None:
    """The policy driven call after call as the live manager drives it, transitions in flight:
    a sleep makes the node suspending, then asleep after its suspend time; a wake makes it
    waking, then awake after its wake time unless the step says the wake fails (it then stays
    waking until the policy's timeout says so). Over the whole run, no sleep ever takes the
    awake count below ``min_awake`` or hits a node with pods, and a node whose wake failed is
    not the one woken next while a sound asleep node would do (for a reserve or floor wake, a
    node slept within ``cooldown_s`` would not: :func:`_would_do`)."""
    n, config, steps = run
    policy, memory, now = PowerPolicy(config), None, 0.0
    views = {f"n{i}": node(f"n{i}") for i in range(n)}
    failing: set[str] = set()
    for step in steps:
        now += step["dt_s"]
        for i, (name, view) in enumerate(views.items()):
            ends = view.state_since_s + (view.suspend_time_s or 0.0)
            if view.state is PowerState.SUSPENDING and now >= ends:
                view = replace(view, state=PowerState.ASLEEP, state_since_s=ends)
            ends = view.state_since_s + (view.wake_time_s or 0.0)
            if view.state is PowerState.WAKING and now >= ends and name not in failing:
                view = replace(view, state=PowerState.AWAKE, state_since_s=ends, empty_since_s=ends)
            if view.state is PowerState.AWAKE:
                pods = step["pods"][i]
                empty_since = None
                if not pods:
                    empty_since = now if view.empty_since_s is None else view.empty_since_s
                view = replace(view, pod_cores=pods, empty_since_s=empty_since)
            views[name] = view
        pending = [pod(f"p{j}", c, now - 60.0) for j, c in enumerate(step["pending"])]
        plan = policy.decide(fleet(now, list(views.values()), pending), memory)
        memory = plan.memory
        awake = sum(v.state is PowerState.AWAKE for v in views.values())
        slept = [d.node for d in plan.decisions if d.action is Action.SLEEP]
        assert awake - len(slept) >= min(config.min_awake, awake), "slept below min_awake"
        failed_now = {d.node for d in plan.decisions if d.action is Action.WAKE_FAILED}
        sound_asleep = {
            name
            for name, v in views.items()
            if v.state is PowerState.ASLEEP and not v.suspect and name not in failed_now
        }
        for d in plan.decisions:
            view = views[d.node]
            if d.action is Action.SLEEP:
                assert view.pod_cores == (), "slept a node with pods"
                views[d.node] = replace(
                    view, state=PowerState.SUSPENDING, state_since_s=now, last_sleep_s=now
                )
            elif d.action is Action.WAKE_FAILED:
                views[d.node] = replace(
                    view,
                    state=PowerState.ASLEEP,
                    state_since_s=now,
                    suspect=True,
                    failed_wakes=view.failed_wakes + 1,
                )
                failing.discard(d.node)
            elif d.action is Action.SUSPEND_FAILED:
                views[d.node] = replace(view, state=PowerState.ASLEEP, suspect=True)
            elif d.action is Action.WAKE:
                if d.node in failed_now or view.suspect:
                    would_do = {
                        s for s in sound_asleep if _would_do(views[s], d.reason, now, config)
                    }
                    assert not would_do, "woke a node whose wake failed, a sound one would do"
                sound_asleep.discard(d.node)
                views[d.node] = replace(
                    view, state=PowerState.WAKING, state_since_s=now, last_wake_s=now
                )
                if step["wake_fails"]:
                    failing.add(d.node)
