"""A Dask cluster of real processes on 127.0.0.1: one ``dask scheduler`` and one ``dask worker``
(``distributed``, the bench extra), each started as its own process as on a real cluster, for
``eams bench sweep --cluster``.

Readiness: the scheduler's ``GET /health`` (its HTTP server on a second port); the worker once
the scheduler lists it. :func:`dask_cluster` starts both and stops them (worker first).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from distributed import Client

from tests.conftest import free_port
from tests.servers._process import ServerProcess

DASK = [sys.executable, "-m", "dask"]


class DaskScheduler(ServerProcess):
    """``dask scheduler`` on a free port; ``address`` is ``tcp://127.0.0.1:PORT``."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        port, http_port = free_port(), free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.argv = [
            *DASK,
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--dashboard-address",
            f"127.0.0.1:{http_port}",
        ]
        self.ready_url = f"http://127.0.0.1:{http_port}/health"
        self.log_path = root / "dask-scheduler.log"


class DaskWorker(ServerProcess):
    """``dask worker`` of one process and one thread, no memory limit, for ``scheduler``;
    ``env`` is its environment (the data folder must be in it)."""

    def __init__(self, root: Path, scheduler: DaskScheduler, env: dict[str, str]) -> None:
        super().__init__()
        self.scheduler = scheduler
        self.env = env
        self.argv = [
            *DASK,
            "worker",
            scheduler.address,
            "--nworkers",
            "1",
            "--nthreads",
            "1",
            "--memory-limit",
            "0",
            "--no-dashboard",
            "--local-directory",
            str(root / "worker"),
        ]
        self.ready_url = scheduler.address
        self.log_path = root / "dask-worker.log"

    def answers(self) -> bool:
        """True once the scheduler lists a worker."""
        with Client(self.scheduler.address, timeout=5) as client:
            return bool(client.scheduler_info()["workers"])


@contextmanager
def dask_cluster(root: Path, env: dict[str, str]) -> Iterator[DaskScheduler]:
    """A started scheduler with one worker (files in ``root``, created); both stopped after."""
    root.mkdir()
    with DaskScheduler(root) as scheduler, DaskWorker(root, scheduler, env):
        yield scheduler
