"""The demo's services (extender, agents) when they start and when they cannot.

A service that cannot start is a :class:`DemoError` naming it, one ``eams: error:`` line through
the CLI, exit status 1, and everything the demo started before it is stopped. The failures are
real: a port another socket listens on, a spool directory another agent holds.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from eams.agent.runner import lock_spool_dir
from eams.cli import main
from eams.demo.errors import DemoError
from eams.demo.services import ExtenderServer
from eams.errors import EamsError

pytestmark = pytest.mark.integration


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


def _settled(before: set[threading.Thread], within_s: float = 5.0) -> set[threading.Thread]:
    """The live threads once those told to stop have ended (rich's ``Live.stop()`` tells its
    refresh thread to stop and returns without joining it), or after ``within_s``."""
    deadline = time.monotonic() + within_s
    while not _threads() <= before and time.monotonic() < deadline:
        time.sleep(0.05)
    return _threads()


def test_the_extender_serves_on_its_own_socket_and_releases_it(tmp_path: Path) -> None:
    before = _threads()
    extender = ExtenderServer(tmp_path).start()
    try:
        assert httpx.get(f"{extender.url}/healthz", timeout=5).status_code == 200
    finally:
        extender.stop()
    assert _settled(before) == before
    with socket.socket() as again:  # the port is free once it stopped
        again.bind(("127.0.0.1", extender.port))


def test_an_occupied_extender_port_is_a_demo_error_naming_it(tmp_path: Path) -> None:
    before = _threads()
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(DemoError) as raised:
            ExtenderServer(tmp_path, port=port)
    assert str(raised.value) == (
        f"the extender cannot listen on 127.0.0.1:{port}: Address already in use"
    )
    assert isinstance(raised.value, EamsError)  # what the CLI prints as one line
    assert _settled(before) == before


def test_an_agent_that_cannot_start_stops_the_demo_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    telemetry = out / "telemetry" / "rho-0.3" / "default"  # the first run's agents
    held = lock_spool_dir(telemetry / "spool" / "mini-3")  # as a second demo's agent would
    assert held is not None
    monkeypatch.setattr(sys, "argv", ["eams", "demo", "--quick", "--out", str(out)])
    before = _threads()
    try:
        with pytest.raises(SystemExit) as exited:
            main()
    finally:
        held.close()
    captured = capsys.readouterr()
    assert exited.value.code == 1, captured.out + captured.err
    spool = telemetry / "spool" / "mini-3"
    assert captured.err.splitlines() == [
        f"eams: error: the agent of mini-3 did not start: spool directory {spool} is in use "
        f"by another agent (pid {os.getpid()}, lock {spool / 'agent.lock'}): "
        "two agents would send every spooled point twice"
    ]
    assert "3/4" in captured.out and "ρ = 0.3, default:" not in captured.out
    # nothing left running: no thread (simulator, meters, extender, agents) outlives the
    # demo, and the agents set up before mini-3's let go of their spools
    assert _settled(before) == before
    for node in ("mini-1", "mini-2"):
        lock = lock_spool_dir(telemetry / "spool" / node)
        assert lock is not None
        lock.close()
