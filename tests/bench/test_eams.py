"""EAMS through the real extender app: in-process over ``httpx.ASGITransport``, and the
``ignorable`` fallback when the extender is unreachable."""

import json
from pathlib import Path

import numpy as np
import pytest

from eams.scheduler.bench.manifest import load_manifest
from eams.scheduler.bench.metrics import summarise
from eams.scheduler.bench.simulator import simulate
from eams.scheduler.bench.sweep import prepare, run_rho_sweep
from eams.scheduler.policies import load
from eams.scheduler.policies._kube import least_allocated
from eams.scheduler.policies.base import Params
from eams.scheduler.policies.eams import ExtenderPolicy
from eams.scheduler.policies.eams.extender_client import ExtenderClient
from tests.bench.conftest import tiny_cluster, tiny_workload
from tests.conftest import free_port

CI_MANIFEST = Path(__file__).resolve().parents[2] / "scheduler/bench/manifests/ci-small.yaml"


def _workload(j: int = 40):
    rng = np.random.default_rng(11)
    return tiny_workload(
        list(np.cumsum(rng.exponential(2.0, j))),
        list(rng.choice([1.0, 2.0, 4.0], j)),
        list(rng.uniform(20, 200, j)),
        tenant=list(rng.integers(0, 3, j)),
    )


def test_eams_places_every_pod_through_the_extender_without_violations() -> None:
    curves = [list(np.linspace(40, 240, 11)), list(np.linspace(100, 150, 11))] * 2
    cluster = tiny_cluster([8, 8, 16, 16], speed=[1.0, 1.2, 0.8, 1.0], points_w=curves)
    workload = _workload()
    policy = load("eams").make(cluster, Params(), 0)
    try:
        replay = simulate(cluster, workload, policy, seed=0)
    finally:
        policy.close()
    figures = summarise(cluster, workload, replay)
    assert figures["placed"] == workload.size and figures["violations"] == 0
    assert policy.client.failures == {"filter": 0, "prioritize": 0, "other": 0}


def test_extender_scores_change_the_choice_against_plain_least_allocated() -> None:
    curves = [list(np.linspace(40, 240, 11)), list(np.linspace(100, 150, 11))] * 2
    cluster = tiny_cluster([8, 8, 16, 16], points_w=curves)
    workload = _workload()
    eams = load("eams").make(cluster, Params(extender_weight=5), 0)
    try:
        with_extender = simulate(cluster, workload, eams, seed=0).node
    finally:
        eams.close()
    plain = simulate(cluster, workload, load("default").make(cluster, Params(), 0), seed=0).node
    assert not np.array_equal(with_extender, plain)


def test_unreachable_extender_is_ignored_and_pods_take_the_default_path() -> None:
    cluster = tiny_cluster([8, 8, 16])
    workload = _workload(20)
    client = ExtenderClient(f"http://127.0.0.1:{free_port()}", timeout_s=0.5)
    policy = ExtenderPolicy(cluster, client, weight=5, telemetry_period_s=5.0)
    try:
        replay = simulate(cluster, workload, policy, seed=0)
    finally:
        policy.close()
    plain = simulate(cluster, workload, load("default").make(cluster, Params(), 0), seed=0)
    assert (replay.node >= 0).all()
    assert np.array_equal(replay.node, plain.node)  # exactly the default placement
    assert client.failures["filter"] > 0 and client.failures["prioritize"] > 0


def test_in_tree_score_is_least_allocated() -> None:
    cluster = tiny_cluster([8, 8])
    client = ExtenderClient(f"http://127.0.0.1:{free_port()}", timeout_s=0.5)
    policy = ExtenderPolicy(cluster, client, weight=5, telemetry_period_s=5.0)
    from eams.scheduler.policies.base import NodeState, WorkloadPod

    state = NodeState.empty(cluster)
    state.alloc_cpu[0] = 4.0
    pod = WorkloadPod(0, "p0", 1.0, 0.0, 10.0, 0)
    policy.start(_workload(1))
    nodes = np.arange(2)
    try:
        assert (
            policy.score(pod, nodes, state).tolist() == least_allocated(pod, nodes, state).tolist()
        )
    finally:
        policy.close()


@pytest.mark.usefixtures("shared_data")
def test_ci_manifest_end_to_end_with_the_in_process_extender() -> None:
    shipped = load_manifest(CI_MANIFEST)
    # the shipped manifest at one load and seed, with fewer pods to keep the suite fast
    trace = shipped.trace.model_copy(
        update={"synthetic": shipped.trace.synthetic.model_copy(update={"pods": 250})}
    )
    manifest = shipped.model_copy(
        update={"workers": 1, "rho": [0.85], "seeds": [1], "trace": trace}
    )
    cluster, _ = prepare(manifest, 0.85, 1)
    assert cluster.size == shipped.cluster.nodes
    results, latency = run_rho_sweep(manifest)
    assert {r["scheduler"] for r in results} == set(shipped.schedulers)
    for row in results:
        assert row["violations"] == 0, row["violation_examples"]
        assert row["placed"] + row["unschedulable"] == row["pods"] == 250
    eams = next(r for r in results if r["scheduler"] == "eams")
    stats = eams["policy_stats"]
    assert {k: stats[k] for k in ("filter", "prioritize", "other")} == dict.fromkeys(
        ("filter", "prioritize", "other"), 0
    )
    # the single-pod score clears no window; the batch market clears windows, some of several
    assert stats["clearings"] == stats["pods_cleared"] == 0 and "pods_per_clearing" not in eams
    batch = next(r for r in results if r["scheduler"] == "eams-batch")
    assert batch["policy_stats"]["single_pod_clearings"] < batch["policy_stats"]["clearings"]
    assert batch["pods_per_clearing"] > 1.0
    assert all(row["p99_ms"] is not None for row in latency)


def _replay(name: str, cluster, workload) -> tuple[str, float, float]:
    """The replay's deterministic figures as JSON, the extender's clearings and pods cleared."""
    policy = load(name).make(cluster, Params(extender_window_ms=200), 0)
    try:
        replay = simulate(cluster, workload, policy, seed=0, batch_window_s=0.2)
        registry = policy.client.app.state.extender.metrics.registry
        clearings = registry.get_sample_value("eams_extender_clearings_total") or 0.0
        cleared = registry.get_sample_value("eams_extender_batch_pods_sum") or 0.0
    finally:
        policy.close()
    figures = json.dumps(summarise(cluster, workload, replay), sort_keys=True)
    return figures, clearings, cleared


def test_eams_batch_clears_real_batches_in_simulated_time_and_replays_byte_identical() -> None:
    # Bursts: pods 50 ms apart on average, so a 200 ms window holds several; the window runs on
    # the simulated clock, so two replays clear the same batches (AR-8).
    rng = np.random.default_rng(11)
    j = 60
    workload = tiny_workload(
        list(np.cumsum(rng.exponential(0.05, j))),
        list(rng.choice([1.0, 2.0, 4.0], j)),
        list(rng.uniform(20, 200, j)),
        tenant=list(rng.integers(0, 3, j)),
    )
    curves = [list(np.linspace(40, 240, 11)), list(np.linspace(100, 150, 11))] * 2
    cluster = tiny_cluster([8, 8, 16, 16], speed=[1.0, 1.2, 0.8, 1.0], points_w=curves)
    first, clearings, cleared = _replay("eams-batch", cluster, workload)
    again, *_ = _replay("eams-batch", cluster, workload)
    single, single_clearings, _ = _replay("eams", cluster, workload)
    assert first == again
    assert clearings > 0 and cleared / clearings > 2  # batches, not one pod at a time
    assert single_clearings == 0 and single != first  # the single-pod score is another run
    assert json.loads(first)["violations"] == 0
