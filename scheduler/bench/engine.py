"""The engine a sweep's cells run on: Dask distributed.

:func:`open_client` gives a :class:`distributed.Client` either to a scheduler already running
somewhere (``address``, e.g. ``tcp://10.0.0.5:8786``: a ``dask scheduler`` process with
``dask worker`` processes on any number of machines) or to a local cluster it starts here —
``workers`` worker processes of one thread each, no memory limit (a cell is one single-threaded
replay; a worker process keeps its per-seed cluster and workload cache between cells, as the
process pool did), its scheduler and status routes on loopback — and closes it on leaving.
:func:`run_unordered` submits one task per item and hands each result back as it finishes.

Dask rather than a home-made pool: it starts local worker processes and reaches remote ones with
the same calls, reschedules the task of a worker that died, ships exceptions back with their
tracebacks, and needs no service beyond its own scheduler (Ray's head node brings a GCS,
a dashboard and a raylet per machine for what is here one function applied to a few hundred
small, independent items). The cells' order of execution never reaches the results (see
:mod:`.sweep`).

The ``dask`` and ``distributed`` packages are the ``bench`` extra (``pip install 'eams[bench]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from eams.scheduler.bench.errors import SweepError

if TYPE_CHECKING:
    from distributed import Client

Name = TypeVar("Name")
Result = TypeVar("Result")

CONNECT_TIMEOUT_S = 30.0
"""How long :func:`open_client` tries to reach a scheduler at an address before giving up (s)."""


@contextmanager
def open_client(address: str | None, workers: int) -> Iterator[Client]:
    """A Dask client, closed (and a local cluster stopped) on leaving.

    Parameters
    ----------
    address : str or None
        A running Dask scheduler (``tcp://HOST:PORT``); ``None`` starts a local cluster.
    workers : int
        Worker processes of the local cluster (ignored with ``address``), ≥ 1.

    Raises
    ------
    SweepError
        If the ``bench`` extra is not installed, or no scheduler answers at ``address`` within
        :data:`CONNECT_TIMEOUT_S`.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # the bench extra is optional
        raise SweepError(
            f"the sweep runs on Dask distributed, which is not installed ({exc}); "
            "install the bench extra: pip install 'eams[bench]'"
        ) from exc
    with ExitStack() as stack:
        if address is None:
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                memory_limit=0,
                dashboard_address="127.0.0.1:0",  # its status routes: a free loopback port
            )
            stack.enter_context(cluster)
            client = Client(cluster)
        else:
            try:
                client = Client(address, timeout=CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError, ValueError) as exc:
                raise SweepError(f"cannot reach a Dask scheduler at {address!r}: {exc}") from exc
        stack.enter_context(client)
        yield client


def run_unordered(
    client: Client,
    function: Callable[..., Result],
    items: Sequence[tuple[Name, tuple[Any, ...]]],
    done: Callable[[Name, Result], None],
) -> None:
    """Run ``function(*args)`` for every ``(name, args)`` of ``items`` on ``client``'s workers;
    ``done(name, result)`` is called here as each one finishes (in finishing order).

    Items are started in the order given (earlier ones have a higher priority) as workers free
    up. An exception raised by ``function`` is raised here, once the tasks that finished before
    it have been handed to ``done``; the remaining tasks are cancelled.
    """
    from distributed import as_completed

    futures = {
        client.submit(function, *args, priority=len(items) - i, pure=False): name
        for i, (name, args) in enumerate(items)
    }
    try:
        for future in as_completed(futures):
            done(futures[future], future.result())
    finally:
        client.cancel(list(futures))
