"""The demo's side of the market's wakes (issue 34), and the report's split of the saving.

The real parts: the live extender in-process (:class:`~eams.demo.services.ExtenderServer`,
its node cache learning the emulated cluster's node objects through ``POST /nodes``), the
PDU simulator behind the virtual testbed, the demo's marker and observer. The wake request is
handed to the hook the extender calls (``Extender.on_wake_request``), as its market does when
it holds a pod for an asleep node; the market's own decision is the extender's tests' and the
quick demo's (``test_demo.py`` checks the record of the live run).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eams.demo.cluster import EmulatedCluster
from eams.demo.fleet import demo_fleet
from eams.demo.live import LiveRun
from eams.demo.power import DemoMarker, DemoObserver
from eams.demo.report import (
    RUN_NAMES,
    cleared_text,
    headline,
    placement_note,
    shares,
)
from eams.demo.runs import Band, tell_nodes
from eams.demo.services import ExtenderServer
from eams.demo.testbed import Testbed as VirtualTestbed  # not collected as a test class
from eams.kube.names import WAKE_REQUEST_ANNOTATION
from eams.kube.wakerequest import WakeRequest
from eams.scheduler.power.ports import SUSPECT
from tests.demo.test_demo_parts import _calibration

pytestmark = pytest.mark.integration


def test_a_wake_request_reaches_the_managers_pod_and_leaves_with_the_release(
    tmp_path: Path,
) -> None:
    nodes, _ = demo_fleet()
    released = []
    with VirtualTestbed(nodes) as testbed, ExtenderServer(tmp_path).start() as extender:
        cluster = EmulatedCluster(testbed, 10.0, lambda: 100.0)
        marker = DemoMarker(cluster, lambda: released.append(True), tell_nodes(cluster, extender))
        sleeping = extender.extender.nodes.sleeping  # what its market prices as asleep
        assert sleeping == {}
        marker.mark_asleep("mini-3", "idle")
        assert sleeping == {"mini-3": "suspending"}  # never priced
        marker.annotate("mini-3", "asleep", "soft-off, outlet off")
        assert sleeping == {"mini-3": "asleep"}
        pending = {"p1": (1.0, 256.0, 99.0, 5.0), "p2": (2.0, 256.0, 99.5, 5.0)}
        observer = DemoObserver(testbed, cluster, [_calibration(n) for n in nodes],
                                lambda: pending)  # fmt: skip

        def wake_nodes() -> dict[str, str | None]:
            fleet = observer.observe(100.0).fleet
            wake = fleet.pending.requested()
            return {p: None if w < 0 else fleet.names[w]
                    for p, w in zip(fleet.pending.names, wake, strict=True)}  # fmt: skip

        assert wake_nodes() == {"p1": None, "p2": None}
        # the extender's market held demo/p1 for mini-3: the request is on the node object
        hook = extender.extender.on_wake_request
        assert hook is not None
        hook(WakeRequest("mini-3", ("demo/p1",), 100.0))
        assert WAKE_REQUEST_ANNOTATION in cluster.objects()["mini-3"]["metadata"]["annotations"]
        assert wake_nodes() == {"p1": "mini-3", "p2": None}
        marker.annotate("mini-3", "waking", "market-bid")
        assert sleeping == {"mini-3": "waking"}
        marker.release("mini-3", "awake")
        assert released and sleeping == {}  # the extender sees it awake: the pod may go there
        assert WAKE_REQUEST_ANNOTATION not in cluster.objects()["mini-3"]["metadata"]["annotations"]
        assert wake_nodes() == {"p1": None, "p2": None}
        # a node found suspect loses its request too: the market clears the pod again
        marker.mark_asleep("mini-4", "idle")
        hook(WakeRequest("mini-4", ("demo/p1", "demo/p2"), 101.0))
        assert wake_nodes() == {"p1": "mini-4", "p2": "mini-4"}
        marker.annotate("mini-4", SUSPECT, "wake-timeout")
        assert wake_nodes() == {"p1": None, "p2": None}
        assert sleeping == {"mini-4": SUSPECT}


# one run's savings against default (fraction, 1σ): default+pm best, EAMS's placement costs
SAVINGS = {"default+pm": (0.260, 0.005), "eams+pm-mgr": (0.225, 0.005), "eams+pm": (0.243, 0.004)}


def test_the_shares_add_up_to_the_saving_and_the_headline_names_the_best() -> None:
    parts = shares([SAVINGS])
    assert sum(v for v, _ in parts.values()) == pytest.approx(24.3)
    assert parts["power_manager"][0] == pytest.approx(26.0)
    assert parts["placement"][0] == pytest.approx(-3.5)
    assert parts["market_wakes"][0] == pytest.approx(1.8)
    assert parts["placement"][1] == pytest.approx(2 * np.hypot(0.5, 0.5))  # ± at 2σ
    text = headline([SAVINGS], 0.8)
    assert text.split(":", 1)[0].endswith(f"{RUN_NAMES['default+pm']} used the least energy "
                                          "per unit of work"), text  # fmt: skip
    assert f"{RUN_NAMES['eams+pm']}: 24.3 % less than the default scheduler alone" in text
    assert "the next best 1.7 points behind" in text
    nothing = {k: (-0.02, 0.004) for k in SAVINGS}
    assert "the default scheduler alone used the least energy" in headline([nothing], 0.8)


def _band() -> Band:
    """A band whose manager slept and woke differently around the two placements."""
    runs = [LiveRun(label, Path("."), transitions={"sleep": sleeps, "wake": wakes})
            for label, sleeps, wakes in (("default+pm", 7, 2), ("eams+pm-mgr", 4, 3))]  # fmt: skip
    return Band(0.8, "test", 40.0, runs)


def test_a_negative_placement_share_is_said_with_why_or_as_noise() -> None:
    share = {"pods": 206, "cleared": 61, "cleared_nowhere": 145, "unscored": 0, "overridden": 0}
    assert cleared_text(share) == "61 of the 206 placements (30 %)"
    parts = shares([SAVINGS])
    note = placement_note(parts, _band(), share)
    assert note is not None and note.startswith("EAMS's placement cost 3.5 points")
    assert "61 of the 206 placements (30 %)" in note
    assert "default+pm 7 sleeps and 2 wakes, eams+pm-mgr 4 and 3" in note
    close = shares([SAVINGS | {"eams+pm-mgr": (0.255, 0.005)}])  # −0.5 ± 1.4 at 2σ
    assert "within its uncertainty" in (placement_note(close, _band(), share) or "")
    better = shares([SAVINGS | {"eams+pm-mgr": (0.27, 0.005)}])
    assert placement_note(better, _band(), share) is None
