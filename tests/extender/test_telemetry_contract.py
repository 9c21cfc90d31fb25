"""The extender's ``POST /telemetry`` refuses exactly what the wall-power check refuses.

Both read telemetry through the one contract (``eams.telemetry``). Each broken record of the
contract's own table (``tests/test_telemetry.py``) is written as line 2 of an agent JSONL file
and loaded by the wall-power check, and POSTed as ``samples[1]`` to the extender through its
HTTP interface (in-process ASGI, as every extender test): the check names the file and line,
the extender answers 400 naming the index and key, and stores nothing. A valid record passes
both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eams.calibrate.wallpower import RunDataError, load_run, parse_run_spec
from tests.extender.conftest import T0_S, post_json
from tests.test_telemetry import REFUSED, case_id, record

pytestmark = pytest.mark.anyio

NOW_NS = int(T0_S * 1e9)


def first(**changes: Any) -> dict[str, Any]:
    """A valid record measured 2 s before the extender's fake clock."""
    return record(measured_at_ns=NOW_NS - 2 * 10**9, **changes)


def second(changes: dict[str, Any]) -> dict[str, Any]:
    """The record under test, 1 s later than :func:`first` unless the case sets the stamp."""
    return record(**{"measured_at_ns": NOW_NS - 10**9, **changes})


def wallpower_error(tmp_path: Path, line_2: dict[str, Any]) -> str | None:
    """What the wall-power check says of a JSONL file holding ``first()`` then ``line_2``."""
    path = tmp_path / "node-a.jsonl"
    path.write_text(json.dumps(first()) + "\n" + json.dumps(line_2) + "\n")
    try:
        load_run(parse_run_spec(f"jsonl:{path}"), "A")
    except RunDataError as exc:
        message = str(exc)
        assert message.startswith(f"{path}:2: "), message  # names file and line
        return message.removeprefix(f"{path}:2: ")
    return None


@pytest.mark.parametrize(("changes", "key", "detail"), REFUSED, ids=map(case_id, REFUSED))
async def test_what_the_wallpower_check_refuses_the_extender_refuses_too(
    make_client, tmp_path: Path, changes: dict[str, Any], key: str | None, detail: str
) -> None:
    bad = second(changes)
    refused_by_wallpower = wallpower_error(tmp_path, bad)
    assert refused_by_wallpower is not None and detail in refused_by_wallpower
    client = await make_client(mode="active", window_ms=0)
    response = await post_json(client, "/telemetry", {"samples": [first(), bad]})
    assert response.status_code == 400, response.text
    where = "samples[1]" if key is None else f"samples[1].{key}"
    error = response.json()["Error"]
    assert error.startswith(f"{where}: ") and detail in error, error
    assert len(client.app.state.extender.telemetry) == 0  # the whole batch refused


async def test_a_valid_record_passes_both(make_client, tmp_path: Path) -> None:
    good = second({})
    assert wallpower_error(tmp_path, good) is None
    client = await make_client(mode="active", window_ms=0)
    response = await post_json(client, "/telemetry", {"samples": [first(), good]})
    assert response.status_code == 202 and response.json() == {"accepted": 2}
    assert client.app.state.extender.telemetry.latest("node-a").headroom == good["headroom"]


async def test_a_sample_from_the_future_is_refused_only_where_a_clock_says_so(
    make_client, tmp_path: Path
) -> None:
    ahead = second({"measured_at_ns": NOW_NS + 60 * 10**9})
    assert wallpower_error(tmp_path, ahead) is None  # a stored run has no "now"
    client = await make_client(mode="active", window_ms=0)
    response = await post_json(client, "/telemetry", {"samples": [ahead]})
    assert response.status_code == 400
    assert response.json()["Error"].startswith("samples[0].measured_at_ns: 60 s ahead")
