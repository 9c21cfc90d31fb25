"""Two producers per node: fresh metered power beats modelled, modelled fills in when it is stale.

On a testbed the PDU owner's agent publishes each node's *metered* power (no utilisation: only
the node knows it) and the node's own agent its *modelled* power; a PDU owner whose meter is
down publishes a fresh *unknown* (no power). The extender's ``TelemetryStore`` decides which of
them a node's headroom comes from (issue 16, item 2). Everything goes through the extender's
HTTP interface (in-process ASGI, as every extender test): samples in by ``POST /telemetry``,
the decision out by ``POST /filter`` in active mode, which removes a node whose *fresh*
headroom is below the floor (0.05).
"""

from __future__ import annotations

from typing import Any

import pytest

from eams.scheduler.extender.service import FILTER_REASON
from tests.extender.conftest import args_names, node_object, pod_object, post_json

pytestmark = pytest.mark.anyio

NAMES = ["node-a", "node-b"]
METERED_HEADROOM = 0.5  # the PDU: plenty of headroom
MODELLED_HEADROOM = 0.02  # the calibration's line: below the 0.05 floor
STALE_AFTER_S = 15.0  # AR-6, the extender's Settings.stale_after_s default


def record(
    node: str, at_s: float, source: str | None, headroom: float | None, utilisation: float | None
) -> dict[str, Any]:
    """A ``TelemetrySample.to_json()`` dict, power consistent with the headroom (P_cap 200 W)."""
    power_w = None if headroom is None else 200.0 * (1.0 - headroom)
    return {
        "node": node,
        "measured_at_ns": int(at_s * 1e9),
        "power_cap_w": 200.0,
        "utilisation": utilisation,
        "power_w": power_w,
        "source": source,
        "headroom": headroom,
        "energy_wh": None,
    }


def metered(node: str, at_s: float) -> dict[str, Any]:
    """What the PDU owner's agent publishes for another node: metered power, no utilisation."""
    return record(node, at_s, "metered", METERED_HEADROOM, None)


def modelled(node: str, at_s: float) -> dict[str, Any]:
    """What the node's own agent publishes without a fresh reading: modelled power."""
    return record(node, at_s, "modelled", MODELLED_HEADROOM, 0.03)


def unknown(node: str, at_s: float) -> dict[str, Any]:
    """What the PDU owner publishes for another node while its meter is down: a fresh unknown."""
    return record(node, at_s, None, None, None)


async def post(client, *samples: dict[str, Any]) -> None:
    response = await post_json(client, "/telemetry", {"samples": list(samples)})
    assert response.status_code == 202, response.text


async def filtered(client) -> bool:
    """Whether ``/filter`` removes node-b (node-a is always fresh and far from its cap)."""
    answer = (await post_json(client, "/filter", args_names(pod_object("p"), NAMES))).json()
    assert answer["NodeNames"] in (NAMES, ["node-a"]), answer
    return answer["FailedNodes"] == {"node-b": FILTER_REASON}


async def cluster(make_client) -> Any:
    client = await make_client(mode="active", window_ms=0, headroom_floor=0.05)
    await post_json(client, "/nodes", {"items": [node_object(n) for n in NAMES]})
    return client


async def test_fresh_metered_power_wins_whichever_producer_is_newer(make_client, clock) -> None:
    """The two agents tick at their own instants, so which sample of node-b is newer, and which
    arrives last, changes from tick to tick; the decision must not."""
    client = await cluster(make_client)
    decisions = []
    for tick in range(20):
        clock.now_s += 1.0
        now = clock.now_s
        meter_lag_s = 0.2 if tick % 2 else 0.6  # newer than the model's sample on odd ticks
        first, second = metered("node-b", now - meter_lag_s), modelled("node-b", now - 0.4)
        if tick % 3 == 0:
            first, second = second, first
        await post(client, metered("node-a", now - 0.1), first, second)
        decisions.append(await filtered(client))
    assert decisions == [False] * 20  # the PDU's 0.5, every tick
    held = client.app.state.extender.telemetry.latest("node-b")
    assert held.source.value == "metered" and held.headroom == METERED_HEADROOM
    # The node's own utilisation (only its agent knows it) rides along with the metered power,
    # so an empty node is still seen as empty by the market.
    assert held.utilisation == 0.03


async def test_modelled_fills_in_once_metered_is_stale(make_client, clock) -> None:
    client = await cluster(make_client)
    last_metered_s = clock.now_s
    await post(client, metered("node-a", last_metered_s), metered("node-b", last_metered_s))
    decisions = {}
    for age_s in range(1, 21):  # the PDU owner has gone quiet; node-b's own agent goes on
        clock.now_s = last_metered_s + age_s
        await post(client, metered("node-a", clock.now_s), modelled("node-b", clock.now_s))
        decisions[age_s] = await filtered(client)
    # Metered stays in charge while it is fresh (age ≤ 15 s, AR-6), then the model fills in.
    assert [a for a, f in decisions.items() if not f] == list(range(1, int(STALE_AFTER_S) + 1))
    assert [a for a, f in decisions.items() if f] == list(range(int(STALE_AFTER_S) + 1, 21))
    # A meter back, even with a sample replayed from a spool (old), changes nothing until a
    # *fresh* metered sample arrives.
    await post(client, metered("node-b", last_metered_s + 1))
    assert await filtered(client)
    await post(client, metered("node-b", clock.now_s))
    assert not await filtered(client)


async def test_a_fresh_unknown_from_the_pdu_owner_does_not_hide_the_model(
    make_client, clock
) -> None:
    """The PDU owner's meter is down: it publishes node-b's power as unknown, newer than the
    model's sample. The node's own fresh modelled power still counts (and filters it)."""
    client = await cluster(make_client)
    decisions = []
    for tick in range(10):
        clock.now_s += 1.0
        now = clock.now_s
        await post(client, metered("node-a", now), modelled("node-b", now - 0.5))
        await post(client, unknown("node-b", now - (0.2 if tick % 2 else 0.8)))
        decisions.append(await filtered(client))
    assert decisions == [True] * 10


async def test_with_every_sample_stale_the_newest_counts(make_client, clock) -> None:
    """No fresh power at all: the newest sample stands (its age discounts it; never filters)."""
    client = await cluster(make_client)
    now = clock.now_s
    await post(
        client,
        metered("node-a", now),
        metered("node-b", now - 40),
        modelled("node-b", now - 30),
        unknown("node-b", now - 20),
    )
    assert not await filtered(client)
    held = client.app.state.extender.telemetry.latest("node-b")
    assert held.measured_at_ns == int((now - 20) * 1e9) and held.power_w is None
