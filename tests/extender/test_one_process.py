"""``eams extender serve`` refuses several workers (issue 16, item 7), through the real command.

Two uvicorn workers split the extender's in-process state (telemetry, clearing table,
reservations): a node under its headroom floor passed ``/filter`` whenever the worker that
answered had not received its telemetry. The refusal is one ``eams: error:`` line: exit 2 for
``--workers`` (a bad value on the command line), 1 for ``WEB_CONCURRENCY`` (which uvicorn would
otherwise read itself: a warning and exit 3).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

pytestmark = pytest.mark.integration

EAMS = str(Path(sys.executable).parent / "eams")  # the installed console script
MODULE = [sys.executable, "-m", "eams.scheduler.extender.cli"]  # what tests/servers/uvicorn.py runs


def serve(argv: list[str], web_concurrency: str | None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "WEB_CONCURRENCY"}
    if web_concurrency is not None:
        env["WEB_CONCURRENCY"] = web_concurrency
    return subprocess.Popen(
        [*argv, "--host", "127.0.0.1", "--port", str(free_port())],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


_OPTION = "invalid value for '--workers': {} workers asked for:"


@pytest.mark.parametrize(
    ("argv", "web_concurrency", "setting", "status"),
    [
        ([EAMS, "extender", "serve", "--workers", "2"], None, _OPTION.format(2), 2),
        (
            [EAMS, "extender", "serve"],
            "2",
            "WEB_CONCURRENCY='2' asks uvicorn for several workers",
            1,
        ),
        (
            [EAMS, "extender", "serve"],
            "four",
            "WEB_CONCURRENCY='four' is not a number of workers",
            1,
        ),
        ([*MODULE, "--workers", "3"], None, _OPTION.format(3), 2),
    ],
    ids=["option", "env", "env-not-a-number", "python-m"],
)
def test_several_workers_are_refused_in_one_line(
    argv: list[str], web_concurrency: str | None, setting: str, status: int
) -> None:
    server = serve(argv, web_concurrency)
    try:
        out, err = server.communicate(timeout=60)
    finally:
        server.kill()
    assert server.returncode == status, err
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"eams: error: {setting}"), err
    assert "one process by design" in err
    assert "telemetry, clearing table and reservations are in-process state" in err


def test_one_worker_from_the_environment_serves(tmp_path: Path) -> None:
    """``WEB_CONCURRENCY=1`` (a platform default) is one process: the extender serves."""
    server = serve([EAMS, "extender", "serve"], "1")
    try:
        port = server.args[server.args.index("--port") + 1]
        url = f"http://127.0.0.1:{port}/healthz"

        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.communicate()[1]
            assert time.monotonic() < deadline, "no /healthz answer within 60 s"
            with contextlib.suppress(httpx.TransportError):  # not listening yet
                if httpx.get(url, timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
    finally:
        server.kill()
    # uvicorn re-raises the SIGTERM after its graceful shutdown (0.29+); serve handles it
    assert server.returncode == 0, err
    assert "Application shutdown complete" in err
    assert "eams: error" not in err
