"""The telemetry contract (``eams.telemetry``): every invariant, both wire forms, the headroom.

The invariants are given as data (one case per rule and edge); the same table drives the
extender and wall-power tests that prove both readers refuse exactly these records
(``tests/extender/test_telemetry_contract.py``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eams.errors import EamsError, TelemetryError
from eams.telemetry import (
    FIELDS,
    MAX_AHEAD_S,
    MEASUREMENT,
    PowerSource,
    TelemetrySample,
    headroom_from_power,
)

T_NS = 1_800_000_000 * 10**9
VALID: dict[str, Any] = {
    "node": "node-a",
    "measured_at_ns": T_NS,
    "power_cap_w": 65.0,
    "utilisation": 0.5,
    "power_w": 40.0,
    "source": "metered",
    "headroom": 1 - 40.0 / 65.0,
    "energy_wh": 12.5,
}

# (what to change in VALID, key named, words of the detail); None as a value deletes the key's
# value (JSON null), MISSING deletes the key.
MISSING = object()
REFUSED: list[tuple[dict[str, Any], str | None, str]] = [
    ({"node": ""}, "node", "must be a non-empty string"),
    ({"node": None}, "node", "must be a non-empty string"),
    ({"node": 7}, "node", "must be a non-empty string"),
    ({"measured_at_ns": 1.8e18}, "measured_at_ns", "must be an integer (epoch ns)"),
    ({"measured_at_ns": True}, "measured_at_ns", "must be an integer (epoch ns)"),
    ({"measured_at_ns": "1800000000000000000"}, "measured_at_ns", "must be an integer"),
    ({"power_cap_w": 0}, "power_cap_w", "0 W is not positive"),
    ({"power_cap_w": -1.0}, "power_cap_w", "-1 W is not positive"),
    ({"power_cap_w": None}, "power_cap_w", "must be a finite number (W)"),
    ({"power_cap_w": math.inf}, "power_cap_w", "must be a finite number (W)"),
    ({"power_cap_w": math.nan}, "power_cap_w", "must be a finite number (W)"),
    ({"power_cap_w": "65"}, "power_cap_w", "must be a finite number (W)"),
    ({"power_cap_w": True}, "power_cap_w", "must be a finite number (W)"),
    ({"utilisation": 1.5}, "utilisation", "1.5 is outside [0, 1]"),
    ({"utilisation": -0.01}, "utilisation", "-0.01 is outside [0, 1]"),
    ({"utilisation": math.nan}, "utilisation", "must be a finite number or null"),
    ({"utilisation": "0.5"}, "utilisation", "must be a finite number or null"),
    ({"power_w": -3.0}, "power_w", "-3 W is negative"),
    ({"power_w": math.inf}, "power_w", "must be a finite number or null"),
    ({"power_w": 10**400}, "power_w", "must be a finite number or null"),  # no OverflowError
    ({"headroom": "x"}, "headroom", "must be a finite number or null"),
    ({"headroom": -math.inf}, "headroom", "must be a finite number or null"),
    ({"energy_wh": -1.0}, "energy_wh", "-1 Wh is negative"),
    ({"energy_wh": math.nan}, "energy_wh", "must be a finite number or null"),
    ({"source": "guess"}, "source", "must be 'metered', 'modelled' or null"),
    ({"source": ["metered"]}, "source", "must be 'metered', 'modelled' or null"),
    ({"source": None}, None, "power_w 40 W is given without source"),
    ({"power_w": None, "headroom": None}, None, "source 'metered' is given without power_w"),
    ({"node": MISSING}, "node", "missing"),
    ({"measured_at_ns": MISSING}, "measured_at_ns", "missing"),
    ({"power_cap_w": MISSING}, "power_cap_w", "missing"),
]


def record(**changes: Any) -> dict[str, Any]:
    """VALID with ``changes`` applied (:data:`MISSING` removes a key)."""
    data = {**VALID, **changes}
    return {k: v for k, v in data.items() if v is not MISSING}


def case_id(case: tuple[dict[str, Any], str | None, str]) -> str:
    return ",".join(f"{k}={'MISSING' if v is MISSING else v!r}"[:40] for k, v in case[0].items())


@pytest.mark.parametrize(("changes", "key", "detail"), REFUSED, ids=map(case_id, REFUSED))
def test_from_json_refuses_each_broken_invariant_naming_the_key(
    changes: dict[str, Any], key: str | None, detail: str
) -> None:
    with pytest.raises(TelemetryError) as caught:
        TelemetrySample.from_json(record(**changes))
    assert (caught.value.key, detail in caught.value.detail) == (key, True), caught.value
    assert isinstance(caught.value, EamsError) and isinstance(caught.value, ValueError)
    if key is None or caught.value.detail == "missing":  # the record as a whole
        assert str(caught.value).startswith("telemetry sample: ")
    else:  # the key, then what is wrong with it: readers prefix where it came from
        assert str(caught.value) == f"{key} {caught.value.detail}"


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"power_w": -3.0}, "power_w"),
        ({"utilisation": 1.5}, "utilisation"),
        ({"power_cap_w": 0.0}, "power_cap_w"),
        ({"energy_wh": math.nan}, "energy_wh"),
        ({"source": "metered"}, "source"),  # the value, not the enum
        ({"source": None}, None),
    ],
)
def test_building_in_python_checks_the_same_rules(changes: dict[str, Any], key: str | None) -> None:
    fields = {**VALID, "source": PowerSource.METERED, **changes}
    with pytest.raises(TelemetryError) as caught:
        TelemetrySample(**fields)
    assert caught.value.key == key


def test_not_an_object_is_refused_as_a_whole() -> None:
    for data in ([VALID], "node-a", None, 3):
        with pytest.raises(TelemetryError, match=r"^telemetry sample: must be an object") as caught:
            TelemetrySample.from_json(data)
        assert caught.value.key is None


@pytest.mark.parametrize(
    "changes",
    [
        {"utilisation": 0.0},
        {"utilisation": 1},
        {"power_w": 0.0, "headroom": 1.0},
        {"power_w": 80.0, "headroom": 1 - 80 / 65.0},  # over the cap: negative headroom
        {"energy_wh": 0},
        {"power_cap_w": 65},
        {"utilisation": None},
        {"power_w": None, "source": None, "headroom": None, "energy_wh": None},
        {"utilisation": MISSING, "energy_wh": MISSING, "headroom": MISSING},
        {"source": "modelled"},
        {"time": 5, "future_field": [1]},  # unknown keys are ignored
    ],
)
def test_edges_of_each_rule_are_accepted(changes: dict[str, Any]) -> None:
    data = record(**changes)
    sample = TelemetrySample.from_json(data)
    assert sample.to_json() == {key: data.get(key) for key in VALID}  # unknown keys dropped
    assert sample.source is None or isinstance(sample.source, PowerSource)


def test_the_stamp_may_lead_the_readers_clock_by_max_ahead_s_and_no_more() -> None:
    ahead_ns = int(MAX_AHEAD_S * 1e9)
    at_limit = record(measured_at_ns=T_NS + ahead_ns)
    assert TelemetrySample.from_json(at_limit, now_ns=T_NS).measured_at_ns == T_NS + ahead_ns
    late = record(measured_at_ns=T_NS + ahead_ns + 1)
    with pytest.raises(TelemetryError) as caught:
        TelemetrySample.from_json(late, now_ns=T_NS)
    assert caught.value.key == "measured_at_ns"
    assert caught.value.detail.startswith("5 s ahead of the reader's clock")
    hour = record(measured_at_ns=T_NS + 3600 * 10**9)
    with pytest.raises(TelemetryError, match=r"3\.6e\+03 s ahead"):
        TelemetrySample(**{**hour, "source": PowerSource.METERED}, now_ns=T_NS)
    assert TelemetrySample.from_json(hour).measured_at_ns == hour["measured_at_ns"]  # no clock


def test_headroom_is_one_minus_power_over_cap_and_unknown_without_power() -> None:
    assert headroom_from_power(40.0, 80.0) == 0.5
    assert headroom_from_power(0.0, 65.0) == 1.0
    assert headroom_from_power(100.0, 80.0) == pytest.approx(-0.25)
    assert headroom_from_power(None, 65.0) is None


def test_line_protocol_has_the_schema_names_and_leaves_missing_values_out() -> None:
    full = TelemetrySample.from_json(record(node="node a,1"))
    line = full.to_line_protocol()
    assert line.startswith(f"{MEASUREMENT},node=node\\ a\\,1,source=metered ")
    assert line.endswith(f" {T_NS}")
    fields = dict(kv.split("=") for kv in line.rsplit(" ", 2)[1].split(","))
    assert set(fields) == set(FIELDS)
    assert float(fields["headroom"]) == full.headroom
    assert fields["power_cap_w"] == "65.0"  # always a float field: InfluxDB types are fixed
    bare = TelemetrySample("node-b", T_NS, 80, utilisation=0.25)
    assert (
        bare.to_line_protocol() == f"eams_node,node=node-b utilisation=0.25,power_cap_w=80.0 {T_NS}"
    )


finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def samples(draw: st.DrawFn) -> TelemetrySample:
    cap = draw(st.floats(min_value=1e-3, max_value=1e6))
    power = draw(st.none() | st.floats(min_value=0, max_value=1e6))
    return TelemetrySample(
        node=draw(st.text(min_size=1, max_size=12)),
        measured_at_ns=draw(st.integers(min_value=0, max_value=2**63)),
        power_cap_w=cap,
        utilisation=draw(st.none() | st.floats(min_value=0, max_value=1)),
        power_w=power,
        source=None if power is None else draw(st.sampled_from(PowerSource)),
        headroom=headroom_from_power(power, cap),
        energy_wh=draw(st.none() | st.floats(min_value=0, max_value=1e9)),
    )


@given(samples())
def test_json_round_trip_is_exact(sample: TelemetrySample) -> None:
    text = json.dumps(sample.to_json())
    assert TelemetrySample.from_json(json.loads(text)) == sample


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
VALUES = {
    "node": st.text(max_size=4) | JSONISH,
    "measured_at_ns": st.integers() | JSONISH,
    "power_cap_w": finite | JSONISH,
    "utilisation": st.floats(min_value=-0.5, max_value=1.5) | JSONISH,
    "power_w": finite | JSONISH,
    "source": st.sampled_from([None, "metered", "modelled", "x"]) | JSONISH,
    "headroom": finite | JSONISH,
    "energy_wh": finite | JSONISH,
}


@given(st.fixed_dictionaries({}, optional=VALUES))
def test_any_json_object_is_a_sample_that_holds_every_rule_or_a_telemetry_error(
    data: dict[str, Any],
) -> None:
    try:
        sample = TelemetrySample.from_json(data)
    except TelemetryError as exc:
        assert exc.key is None or exc.key in VALUES
        return
    assert sample.node and isinstance(sample.measured_at_ns, int)
    assert math.isfinite(sample.power_cap_w) and sample.power_cap_w > 0
    assert sample.utilisation is None or 0 <= sample.utilisation <= 1
    assert sample.power_w is None or 0 <= sample.power_w < math.inf
    assert sample.energy_wh is None or 0 <= sample.energy_wh < math.inf
    assert sample.headroom is None or math.isfinite(sample.headroom)
    assert (sample.source is None) == (sample.power_w is None)
    assert sample.source is None or isinstance(sample.source, PowerSource)
