"""Placement records from real clearings: the gate reasons, the candidates kept, the certificate."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams, Pods, bids, clear
from eams.scheduler.record import BestBid, placement_records
from eams.scheduler.record.arrays import gate_codes, picked_columns
from eams.scheduler.record.build import Window, windows_records
from eams.scheduler.record.schema import GATE_REASONS, Placement
from tests.record.conftest import (
    AGE_S,
    FLOOR,
    HEADROOM,
    NODE_NAMES,
    WindowPod,
    nodes,
    window,
)


def test_each_node_has_its_reason(placements: list[Placement]) -> None:
    record = placements[0]
    reasons = {g.node: g.reason for g in record.gated}
    assert reasons == {"mini-3": "headroom_floor", "mini-4": "capped"}
    assert record.gated_counts == {"headroom_floor": 1, "capped": 1}
    open_nodes = {c.node for c in record.candidates}
    assert open_nodes == {"mini-1", "mini-2", "mini-5", "mini-6"}
    assert record.candidates_total == 6
    assert record.stale_after_s == 15.0


def test_candidates_are_best_bids_first_with_their_inputs(placements: list[Placement]) -> None:
    for record in placements:
        assert record.cleared_node == record.candidates[0].node
        others = [c.bid for c in record.candidates[1:]]
        assert others == sorted(others, reverse=True)
        for c in record.candidates:
            i = NODE_NAMES.index(c.node)
            assert c.score == i  # the scores passed in, by column
            assert c.age_s == (None if np.isnan(AGE_S[i]) else AGE_S[i])
            assert c.headroom == (None if np.isnan(HEADROOM[i]) else HEADROOM[i])
            assert c.gate is not None and 0 <= c.gate < 1
        assert record.price == record.candidates[0].price
        assert record.bid == record.candidates[0].bid


def test_the_cleared_node_is_kept_even_when_it_is_not_the_best_bid() -> None:
    """Three pods compete for mini-2 (best for everyone) with one slot: two of them clear
    elsewhere, and their records keep that node though a higher bid exists."""
    node_arrays = replace(nodes(), slots=np.array([1, 1, 1, 1, 1, 1]))
    pods = Pods(
        slots=np.ones(3, dtype=np.int64),
        work_core_s=np.full(3, 100.0),
        priority=np.array([1.0, 2.0, 3.0]),
        tenant=np.zeros(3, dtype=np.int64),
    )
    params = AuctionParams()
    clearing = clear(pods, node_arrays, params)
    values = bids.bid_values(pods, node_arrays, params)
    records = placement_records(
        pods=[WindowPod(f"ns/p{j}", None) for j in range(3)],
        names=NODE_NAMES,
        values=values,
        clearing=clearing,
        headroom=node_arrays.headroom,
        age_s=node_arrays.age_s,
        mode="shadow",
        at_s=1.0,
        keep_candidates=1,
    )
    best_node = NODE_NAMES[int(np.argmax(values[0]))]
    not_best = [r for r in records if r.cleared_node != best_node]
    assert len(not_best) == 2
    for record in not_best:
        assert [c.node for c in record.candidates] == [record.cleared_node, best_node]
    assert {r.pod.uid for r in records} == {None}


def test_fewer_open_nodes_than_kept_lists_each_node_once() -> None:
    # the demo's record (2 Dec) listed mini-1 three times: cleared onto mini-6, 3 open nodes
    # of 6, 5 kept — the exhausted picks fell on column 0 again and again
    values = np.array([[0.0012, 0.0009, 0.5, 0.2, 0.3, 0.0119]])
    codes = np.array([[0, 0, 1, 2, 1, 0]], dtype=np.int8)  # mini-3..5 gated
    assert picked_columns(values, codes, np.array([5]), k=5) == [[5, 0, 1]]
    assert picked_columns(values, codes, np.array([-1]), k=5) == [[5, 0, 1]]  # none cleared


def test_gate_reasons_take_the_first_that_applies() -> None:
    values = np.array([[1.0, 1.0, 0.0, 1.0, np.nan]])
    headroom = np.array([0.5, -0.2, 0.5, -0.1, 0.5])
    excluded = {
        "filter": np.array([[True, True, False, False, False]]),
        "asleep": np.array([False, True, False, False, False]),
    }
    codes = gate_codes(values, headroom, excluded)
    words = ["" if c == 0 else GATE_REASONS[c - 1] for c in codes[0]]
    assert words == ["filter", "asleep", "no_bid", "capped", "no_bid"]
    with pytest.raises(ValueError, match="unknown gate reasons"):
        gate_codes(values, headroom, {"too_hot": np.ones(5, dtype=bool)})


def test_gated_names_are_bounded_but_every_one_is_counted() -> None:
    n = 50
    names = [f"n{i}" for i in range(n)]
    values = np.ones((1, n))
    values[0, 1:] = 0.0  # 49 nodes with no bid
    records = placement_records(
        pods=[WindowPod("ns/p", "u")],
        names=names,
        values=values,
        clearing=BestBid(assignment=np.array([0]), prices=np.zeros(n), value=1.0),
        headroom=np.full(n, 0.5),
        age_s=np.full(n, 1.0),
        mode="active",
        at_s=1.0,
        keep_gated=4,
    )
    assert records[0].gated_counts == {"no_bid": 49}
    assert [g.node for g in records[0].gated] == ["n1", "n2", "n3", "n4"]


def test_certificates() -> None:
    single = window(3, slots=1)[0].certificate
    assert single.kind == "j_epsilon"
    assert single.epsilon is not None and single.bound == pytest.approx(3 * single.epsilon)
    multi = window(3, slots=2)[0].certificate
    assert multi.kind == "gap_bound" and multi.bound >= 0
    best = placement_records(
        pods=[WindowPod("ns/p", "u")],
        names=["a", "b"],
        values=np.array([[1.0, 2.0]]),
        clearing=BestBid(assignment=np.array([1]), prices=np.zeros(2), value=2.0),
        headroom=np.array([0.5, 0.5]),
        age_s=np.array([1.0, 1.0]),
        mode="active",
        at_s=1.0,
    )[0]
    assert (best.method, best.certificate.kind, best.certificate.bound) == ("best_bid", "exact", 0)
    assert best.cleared_node == "b"


def test_one_clearing_id_per_window_unique_across_windows() -> None:
    a, b = window(2), window(2)
    assert a[0].clearing_id == a[1].clearing_id != b[0].clearing_id


def test_shapes_are_checked() -> None:
    with pytest.raises(ValueError, match="headroom has shape"):
        placement_records(
            pods=[WindowPod("ns/p", "u")],
            names=["a", "b"],
            values=np.ones((1, 2)),
            clearing=BestBid(assignment=np.array([0]), prices=np.zeros(2), value=1.0),
            headroom=np.ones(3),
            age_s=np.ones(2),
            mode="active",
            at_s=1.0,
        )


def test_numbers_keep_six_significant_digits() -> None:
    values = np.array([[0.0913341960194967, 123456.789, 1.5e-7, 0.0]])
    record = placement_records(
        pods=[WindowPod("ns/p", "u")],
        names=["a", "b", "c", "d"],
        values=values,
        clearing=BestBid(assignment=np.array([1]), prices=np.zeros(4), value=1.0),
        headroom=np.array([0.123456789, 0.5, 0.5, 0.5]),
        age_s=np.array([1.0, 2.0, 3.0, np.inf]),
        mode="active",
        at_s=1.0,
    )[0]
    by_node = {c.node: c for c in record.candidates}
    assert by_node["a"].bid == 0.0913342 and by_node["a"].headroom == 0.123457
    assert by_node["b"].bid == 123457.0 == record.bid
    assert by_node["c"].bid == 1.5e-7
    assert record.gated_counts == {"no_bid": 1}  # d: a bid of 0
    assert [g.age_s for g in record.gated] == [None]  # inf is not a number on record


def test_windows_built_together_are_each_built_alone() -> None:
    """Four windows stacked — by their gates of either shape or none, with and without scores,
    cleared by the engine or a best bid — give each window's records alone, each kept node's
    gate that of its own window (and none for a window without gates)."""
    params, node_arrays = AuctionParams(), nodes()
    rng = np.random.default_rng(3)
    windows = []
    for w, j_pods in enumerate((1, 2, 3, 1)):
        pods = Pods(
            slots=np.ones(j_pods, dtype=np.int64),
            work_core_s=np.full(j_pods, 100.0 + w),
            priority=np.arange(1.0, j_pods + 1),
            tenant=np.zeros(j_pods, dtype=np.int64),
        )
        values = bids.bid_values(pods, node_arrays, params) * (1 + w)
        best = int(values[0].argmax())
        clearing = (
            clear(pods, node_arrays, params)
            if j_pods > 1
            else BestBid(np.array([best]), np.zeros(6), float(values[0, best]))
        )
        masks = [
            {"headroom_floor": FLOOR},
            {"filter": rng.random((j_pods, 6)) < 0.3},
            {},
            {"no_fit": rng.random((j_pods, 6)) < 0.3, "headroom_floor": FLOOR},
        ]
        windows.append(
            Window(
                pods=[WindowPod(f"ns/w{w}-{j}", f"uid-{w}-{j}") for j in range(j_pods)],
                values=values,
                clearing=clearing,
                headroom=HEADROOM + 0.01 * w,
                age_s=AGE_S + w,
                at_s=100.0 + w,
                gate=None if w == 2 else rng.uniform(0.0, 1.0, 6),
                clearing_id=f"c{w}",
                excluded=masks[w],
                scores=None if w == 1 else np.tile(np.arange(6), (j_pods, 1)),
            )
        )
    options = {
        "names": NODE_NAMES,
        "mode": "active",
        "stale_after_s": 15.0,
    }
    together = windows_records(windows, **options)  # type: ignore[arg-type]
    alone = [r for w in windows for r in windows_records([w], **options)]  # type: ignore[arg-type]
    assert together == alone and len(together) == 7
    assert [r.clearing_id for r in together] == ["c0", "c1", "c1", "c2", "c2", "c2", "c3"]
    assert {c.score for r in together[1:3] for c in r.candidates} == {None}
    for record, w in zip(together, (0, 1, 1, 2, 2, 2, 3), strict=True):
        window_gate = windows[w].gate
        for c in record.candidates:
            if window_gate is None:
                assert c.gate is None
            else:
                assert c.gate == pytest.approx(window_gate[NODE_NAMES.index(c.node)], rel=1e-5)
    assert together[0].gated_counts == {"headroom_floor": 1, "capped": 1}
