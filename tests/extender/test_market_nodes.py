"""``Market.nodes`` checks the calibration columns once, and again whenever they change.

The market is built on a real ``NodeTable`` and ``HerdGuard`` (no server needed: the engine
inputs are pure numpy)."""

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams
from eams.scheduler.errors import AuctionInputError
from eams.scheduler.extender.herding import HerdGuard
from eams.scheduler.extender.market import Market
from eams.scheduler.extender.table import NodeTable

NOW_S = 1_800_000_000.0


def market(count: int = 4) -> tuple[Market, list[str]]:
    table = NodeTable()
    names = [f"node-{i}" for i in range(count)]
    for i, name in enumerate(names):
        table.set_capacity(name, 8000, 32 * 2**30, 110)
        row, cols = table.row(name), table.cols
        cols["p_idle_w"][row], cols["p_max_w"][row] = 40.0 + i, 150.0 + i
        cols["p_wake_w"][row], cols["speed"][row] = 40.0 + i, 1.0
        cols["headroom"][row], cols["power_cap_w"][row] = 0.5, 200.0
        cols["measured_at_s"][row], cols["utilisation"][row] = NOW_S, 0.3
    return Market(table, HerdGuard(5.0, 30.0, table), AuctionParams(), 60.0), names


def test_calibration_columns_are_checked_once_and_again_when_they_change() -> None:
    m, names = market()
    view = m.view(names, NOW_S)
    first = m.nodes(view, slice(None))
    m.table.add_used(names[0], 3000, 0, 1)  # slots change, the calibration does not
    second = m.nodes(m.view(names, NOW_S), slice(None))
    assert second.p_max_w is first.p_max_w  # reused, not checked again
    assert second.slots.tolist() == [5, 8, 8, 8] and first.slots.tolist() == [8, 8, 8, 8]
    # a calibration changes in place in the table: checked again, and a bad one is refused
    m.table.cols["p_max_w"][m.table.row(names[2])] = 10.0  # below its P_idle
    with pytest.raises(AuctionInputError, match=r"nodes\.p_max_w\[2\]"):
        m.nodes(m.view(names, NOW_S), slice(None))
    m.table.cols["p_max_w"][m.table.row(names[2])] = 300.0
    third = m.nodes(m.view(names, NOW_S), slice(None))
    assert third.p_max_w[2] == 300.0 and first.p_max_w[2] == 152.0  # the checked copy held
    assert np.shares_memory(third.p_max_w, m.table.cols["p_max_w"]) is False


def test_a_one_pod_batch_reuses_its_pods_arrays_only_for_the_same_shape() -> None:
    from eams.kube.requests import PodRequest
    from eams.scheduler.extender.pending import PendingPod

    m, _ = market()

    def pod(key: str, cpu_milli: int, priority: float = 1.0) -> PendingPod:
        return PendingPod(key, PodRequest(cpu_milli, 2**28), priority, "default", None)

    first = m.pod_arrays([pod("a/1", 500)])
    assert m.pod_arrays([pod("a/2", 500)]) is first  # a replica: same slots, work and π
    with pytest.raises(ValueError, match="read-only"):  # shared: no clearing may write into it
        first.slots[0] = 3
    wider = m.pod_arrays([pod("a/3", 1500)])
    assert wider is not first and wider.slots.tolist() == [2]
    assert m.pod_arrays([pod("a/4", 500, 2.0)]).priority.tolist() == [2.0]
    assert first.slots.tolist() == [1] and first.priority.tolist() == [1.0]  # held
    pair = m.pod_arrays([pod("a/5", 500), pod("b/1", 500)])
    assert pair.slots.tolist() == [1, 1]


def test_with_the_node_list_known_a_write_through_the_table_is_seen_at_once(tmp_path) -> None:
    """``nodes(view, keep, names)`` skips even the comparison while the same list and rows
    come again and ``NodeTable.capacity_version`` stands; a calibration or an allocatable
    written through the table (``set_calibration``, ``set_capacity``) is seen the next time."""
    from eams.calibrate.calfile import load_calibration
    from tests.extender.conftest import write_calibration

    m, names = market()
    keep = slice(None)
    first = m.nodes(m.view(names, NOW_S), keep, names)
    m.table.add_used(names[1], 2000, 0, 1)  # usage is not a calibration: nothing compared
    second = m.nodes(m.view(names, NOW_S), keep, names)
    assert second.p_max_w is first.p_max_w and second.slots.tolist() == [8, 6, 8, 8]
    m.table.set_calibration(load_calibration(write_calibration(tmp_path, names[3], 60.0, 400.0)))
    third = m.nodes(m.view(names, NOW_S), keep, names)
    assert third.p_max_w[3] == pytest.approx(400.0) and first.p_max_w[3] == 153.0
    m.table.set_capacity(names[0], 4000, 32 * 2**30, 110)
    fourth = m.nodes(m.view(names, NOW_S), keep, names)
    assert fourth.cores.tolist() == [4.0, 8.0, 8.0, 8.0]
    assert m.nodes(m.view(names, NOW_S), keep, names).cores is fourth.cores
