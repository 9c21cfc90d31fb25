"""The record format: every kind round-trips through its JSON line, the names stay in step with
the auction, and a bad or newer line is refused with its path."""

from __future__ import annotations

import json
import math

import msgspec
import pytest

from eams.scheduler.auction import Method
from eams.scheduler.record import Bound, Ended, Energy, Placement, PodRef, Power, schema
from eams.scheduler.record.schema import METHODS, decode, encode, encode_lines

POD = PodRef(namespace="default", name="job-0", uid="uid-0")


def test_method_names_are_the_auction_methods() -> None:
    assert tuple(m.value for m in Method) == METHODS
    assert schema.BEST_BID not in METHODS


def test_every_kind_round_trips(placements: list[Placement]) -> None:
    records = [
        placements[0],
        Power(
            at_s=1.5,
            mode="shadow",
            node="mini-4",
            from_state="running",
            to_state="suspended",
            reason="idle_past_break_even",
            detail="empty 620 s, break-even 240 s",
            numbers={"idle_s": 620.0, "break_even_s": 240.0, "wake_energy_j": None},
        ),
        Bound(
            at_s=2.0,
            pod=POD,
            bound_node="mini-1",
            cleared_node="mini-1",
            honoured=True,
            mode="active",
            clearing_id="c-1",
        ),
        Ended(
            at_s=3.0,
            pod=POD,
            phase="Succeeded",
            deleted=False,
            node="mini-1",
            started_at_s=2.5,
            ended_at_s=3.0,
            runtime_s=0.5,
        ),
        Energy(at_s=4.0, pod=POD, node="mini-1", energy_wh=1.25, source="modelled"),
    ]
    lines = encode_lines(records).splitlines()
    assert len(lines) == len(records)
    for record, line in zip(records, lines, strict=True):
        data = json.loads(line)
        assert data["kind"] == record.__struct_config__.tag
        assert data["version"] == schema.SCHEMA_VERSION
        assert decode(line) == record


def test_a_placement_line_has_every_field_named_in_the_issue(placements: list[Placement]) -> None:
    data = json.loads(encode(placements[0]))
    for key in (
        "pod",
        "clearing_id",
        "mode",
        "candidates",
        "gated",
        "gated_counts",
        "cleared_node",
        "method",
        "certificate",
        "at_s",
    ):
        assert key in data
    assert set(data["pod"]) == {"namespace", "name", "uid"}
    assert set(data["candidates"][0]) >= {"node", "bid", "price", "headroom", "age_s"}


def test_nan_is_written_as_null_and_read_as_none() -> None:
    record = Energy(at_s=1.0, pod=POD, node="n", energy_wh=math.nan, source="modelled")
    assert json.loads(encode(record))["energy_wh"] is None
    with pytest.raises(msgspec.ValidationError):  # energy_wh is required to be a number
        decode(encode(record))


def test_a_bad_line_names_the_field() -> None:
    line = encode(Energy(at_s=1.0, pod=POD, node="n", energy_wh=1.0, source="metered"))
    data = json.loads(line)
    data["pod"]["uid"] = 7
    with pytest.raises(msgspec.ValidationError, match=r"\$\.pod\.uid"):
        decode(json.dumps(data))
    data["kind"] = "teleport"
    with pytest.raises(msgspec.ValidationError, match="teleport"):
        decode(json.dumps(data))


def test_unknown_fields_are_ignored() -> None:
    data = json.loads(encode(Energy(at_s=1.0, pod=POD, node="n", energy_wh=1.0, source="metered")))
    data["added_later"] = {"x": 1}
    assert decode(json.dumps(data)).node == "n"
