"""Fixtures shared by every test package: the real-data folder and free loopback ports."""

import socket
from pathlib import Path

import pytest

from eams.datasets import DATA_DIR_ENV, data_dir


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data folder (``$EAMS_DATA_DIR`` or ``../shared/data``).

    Tests of the data tier skip, loudly, only when it is absent (a user's fresh clone);
    ``.ci/run`` refuses to start without it, so in CI they always run.
    """
    path = data_dir()
    if not path.is_dir():
        pytest.skip(f"real-data folder {path} is absent (set {DATA_DIR_ENV})")
    return path


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port on 127.0.0.1 that was free a moment ago (TCP by default, UDP with SOCK_DGRAM)."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def tcp_port() -> int:
    """A free TCP port on loopback."""
    return free_port(socket.SOCK_STREAM)


@pytest.fixture
def udp_port() -> int:
    """A free UDP port on loopback."""
    return free_port(socket.SOCK_DGRAM)


LONGEST_FIRST = (
    "tests/ansible/test_playbooks.py",
    "tests/demo/test_demo.py",
    "tests/bench/test_sweep.py",
    "tests/calibrate/powerstates/test_measure.py",
    "tests/test_cli_conformance.py",
)
"""The files that take longest (real playbook runs, the demo, the power-state measurement):
collected first, so that ``.ci/run``'s two processes (pytest-xdist, ``--dist loadfile``, which
hands out files in collection order) start them at once instead of ending on them."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the tests of :data:`LONGEST_FIRST` to the front, in that order (a stable sort: the
    order inside each file, and of every other file, is kept)."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    root = Path(__file__).resolve().parent.parent

    def key(item: pytest.Item) -> int:
        relative = Path(item.fspath).resolve().relative_to(root).as_posix()
        return rank.get(relative, len(rank))

    items[:] = sorted(items, key=key)
