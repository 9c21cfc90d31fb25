"""Reading a run from a real InfluxDB 1.6 over the v1 query API gives the same check as JSONL."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from eams.calibrate.wallpower import (
    InfluxUnreachable,
    RunDataError,
    check_runs,
    load_fleet,
    load_run,
    parse_run_spec,
)
from eams.telemetry import TelemetrySample
from tests.servers.influxdb import INFLUXD, InfluxDB
from tests.wallpower.synth import START_NS

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def influx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InfluxDB]:
    if INFLUXD is None:
        pytest.skip("influxd not installed (Debian package influxdb)")
    server = InfluxDB(tmp_path_factory.mktemp("influxdb"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _load_into(influx: InfluxDB, database: str, directory: Path) -> None:
    """Write a JSONL run into ``database`` with the agent's own line-protocol writer."""
    influx.create_database(database)
    lines = [
        TelemetrySample.from_json(json.loads(line)).to_line_protocol()
        for path in sorted(directory.glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    answer = httpx.post(
        f"{influx.url}/write",
        params={"db": database, "precision": "ns"},
        content="\n".join(lines),
        timeout=10,
    )
    assert answer.status_code == 204, answer.text


def test_influx_run_equals_jsonl_run(influx: InfluxDB, two_runs, fleet_dir: Path) -> None:
    dir_a, dir_b, _, _ = two_runs
    _load_into(influx, "run_a", dir_a)
    _load_into(influx, "run_b", dir_b)
    host = influx.url.removeprefix("http://")
    window = f"start={START_NS / 1e9}&end={START_NS / 1e9 + 60}"
    fleet = load_fleet(fleet_dir)
    from_influx = check_runs(
        load_run(parse_run_spec(f"influx://{host}/run_a?{window}"), "A"),
        load_run(parse_run_spec(f"influx://{host}/run_b?{window}"), "B"),
        fleet,
    )
    from_jsonl = check_runs(
        load_run(parse_run_spec(f"jsonl:{dir_a}"), "A"),
        load_run(parse_run_spec(f"jsonl:{dir_b}"), "B"),
        fleet,
    )
    assert from_influx.saving_metered == pytest.approx(from_jsonl.saving_metered, abs=1e-12)
    assert from_influx.saving_modelled == pytest.approx(from_jsonl.saving_modelled, abs=1e-12)
    assert list(from_influx.a.nodes) == list(from_jsonl.a.nodes)
    assert from_influx.a.nodes["n1"].method == "counter"


def test_influx_empty_window_and_unknown_database(influx: InfluxDB, two_runs) -> None:
    _load_into(influx, "run_w", two_runs[0])
    host = influx.url.removeprefix("http://")
    with pytest.raises(RunDataError, match=r"no telemetry in .*the source holds no sample"):
        load_run(parse_run_spec(f"influx://{host}/run_w?start=0&end=60"), "A")
    with pytest.raises(RunDataError, match="database not found"):
        load_run(parse_run_spec(f"influx://{host}/nosuchdb?start=0&end=60"), "A")


@pytest.mark.parametrize(
    ("fields", "tags", "message"),
    [
        ("power_w=30.0,utilisation=1.5,power_cap_w=65.0", ",source=metered", "utilisation 1.5 is"),
        ("power_w=-3.0,utilisation=0.5,power_cap_w=65.0", ",source=metered", "power_w -3 W is neg"),
        ("power_w=30.0,utilisation=0.5,power_cap_w=65.0", "", "telemetry sample: power_w 30 W"),
        ("utilisation=0.5,power_cap_w=0.0", "", "power_cap_w 0 W is not positive"),
    ],
)
def test_influx_rows_go_through_the_telemetry_contract(
    influx: InfluxDB, fields: str, tags: str, message: str
) -> None:
    # written by hand: the agent's writer cannot build such a point
    database = f"bad_{abs(hash((fields, tags)))}"
    influx.create_database(database)
    at_ns = START_NS + 10**9
    answer = httpx.post(
        f"{influx.url}/write",
        params={"db": database, "precision": "ns"},
        content=f"eams_node,node=n1{tags} {fields} {at_ns}",
        timeout=10,
    )
    assert answer.status_code == 204, answer.text
    host = influx.url.removeprefix("http://")
    spec = parse_run_spec(f"influx://{host}/{database}?start={START_NS / 1e9}&end={at_ns / 1e9}")
    with pytest.raises(RunDataError, match=rf"\(series node=n1, time {at_ns}\): {message}"):
        load_run(spec, "A")


class _NotInflux(http.server.BaseHTTPRequestHandler):
    """Another service on the port the SPEC names: 200 and JSON, of another shape."""

    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = self.bodies.pop(0)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def not_influx() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotInflux)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.mark.parametrize(
    "body", [b"[1, 2]\n", b'{"results": [{"series": [{"columns": ["time"]}]}]}\n']
)
def test_a_server_that_is_not_influx_is_named(not_influx: str, body: bytes) -> None:
    _NotInflux.bodies[:] = [body]
    spec = parse_run_spec(f"influx://{not_influx}/eams?start=0&end=60")
    with pytest.raises(RunDataError, match=r"not an InfluxDB 1\.x query result .*is this InfluxDB"):
        load_run(spec, "A")


class _Trickle(http.server.BaseHTTPRequestHandler):
    """A server that answers one byte every 0.1 s and never finishes (each read is quick)."""

    stop = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.end_headers()
        while not self.stop.wait(0.1):
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return

    def log_message(self, *args: object) -> None:
        pass


def test_a_trickling_server_does_not_hang_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("eams.calibrate.wallpower.influx.ANSWER_DEADLINE_S", 1.0)
    _Trickle.stop.clear()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        spec = parse_run_spec(f"influx://127.0.0.1:{server.server_address[1]}/e?start=0&end=6")
        with pytest.raises(InfluxUnreachable, match="did not complete within 1 s"):
            load_run(spec, "A")
    finally:
        _Trickle.stop.set()
        server.shutdown()
        thread.join()
        server.server_close()
