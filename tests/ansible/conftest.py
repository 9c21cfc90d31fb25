"""Fixtures for the ansible tests: a wheel of this repository and three real sshd "nodes"."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.sshd import SshServer, sshd

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"


@pytest.fixture(scope="session")
def eams_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from this checkout (no dependencies), as an operator would build it."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(out),
            str(REPO),
        ],
        check=True,
    )
    (wheel,) = out.glob("eams-*.whl")
    return wheel


@pytest.fixture(scope="session")
def ssh_nodes() -> Iterator[list[SshServer]]:
    """Three sshd servers on three loopback ports: three inventory hosts."""
    if shutil.which("ansible-playbook", path=str(ANSIBLE_PLAYBOOK.parent)) is None:
        pytest.skip("ansible-playbook is not installed in this environment")
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(sshd()) for _ in range(3)]
