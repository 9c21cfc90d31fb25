"""``eams extender serve``: run the extender under uvicorn, in one process.

The extender is one process by design: the telemetry store, the clearing table (each node's
cleared slots and prices) and the reservations that stop herding are in-process state that
every request reads and writes. Several uvicorn workers would each hold their own copy, fed
by whichever requests reached them: with two workers (issue 16), ``/filter`` let a node under
its headroom floor pass on 8 and 13 of 20 calls in two trials (the worker that answered had
never received the node's telemetry), ``/readyz`` flipped between 200 and 503 and ``/metrics``
between two counters; one worker filtered the node on 20 of 20. So ``serve``
refuses ``--workers`` above 1 and ``WEB_CONCURRENCY`` (which uvicorn reads when not told the
number of workers) asking for more, and always tells uvicorn 1. The Deployment runs one
replica for the same reason (``deploy/k3s/deployment.yaml``).

SIGTERM (what Kubernetes and systemd send) is a clean stop: uvicorn shuts down gracefully and
``serve`` exits 0. uvicorn (0.29+, here 0.54) re-raises the signal it caught once its shutdown
is done, so that the process "dies of it" (exit 143 under a shell); ``serve`` keeps its own
handler in place while uvicorn runs, so the re-raised signal lands there and only confirms the
stop. A SIGTERM that comes before uvicorn has taken the signals over (while the app is being
built) asks the server to stop as soon as it has started.
"""

from __future__ import annotations

import errno
import gc
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, Literal, TypeVar

import click

from eams.cli import FiniteFloatRange, ValueType, configure_logging, log_level_option
from eams.kube.lease import lease_ref
from eams.kube.names import MARKET_LEASE
from eams.scheduler.extender.decisions import record_settings
from eams.scheduler.extender.errors import ExtenderConfigError
from eams.scheduler.extender.fallback import PERIOD_S, STUCK_AFTER_S
from eams.scheduler.extender.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])

#: The environment variable uvicorn takes its number of workers from (uvicorn.Config).
WORKERS_ENV = "WEB_CONCURRENCY"

_ONE_PROCESS = (
    "the extender runs as one process by design: its telemetry, clearing table and "
    "reservations are in-process state that several workers would split between them "
    "(a /filter answered without the node's telemetry, /readyz and /metrics per worker)"
)


def check_one_process(workers: int, web_concurrency: str | None) -> None:
    """Refuse any request for more than one server process.

    Parameters
    ----------
    workers : int
        The ``--workers`` option.
    web_concurrency : str or None
        The ``WEB_CONCURRENCY`` environment variable, when set.

    Raises
    ------
    ExtenderConfigError
        ``workers`` is not 1, or ``web_concurrency`` is set to anything but a number ≤ 1;
        the message names the setting and says why the extender is one process.
    """
    if workers != 1:
        raise ExtenderConfigError(f"{workers} workers asked for: {_ONE_PROCESS}; run it with 1")
    value = (web_concurrency or "").strip()
    try:
        several = bool(value) and int(value) > 1
    except ValueError:
        raise ExtenderConfigError(
            f"{WORKERS_ENV}={web_concurrency!r} is not a number of workers; {_ONE_PROCESS}: "
            "unset it or set 1"
        ) from None
    if several:
        raise ExtenderConfigError(
            f"{WORKERS_ENV}={web_concurrency!r} asks uvicorn for several workers; "
            f"{_ONE_PROCESS}: unset it or set 1"
        )


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` for uvicorn to serve on (it listens on it).

    Bound here rather than by uvicorn so that an address in use or not available is this
    command's one error line (exit 1), not uvicorn's log lines and its startup-failure status.

    Raises
    ------
    ExtenderConfigError
        It cannot be bound: names the address and why.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except OSError as exc:
        raise ExtenderConfigError(f"cannot listen on {host}:{port}: {exc}") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ExtenderConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (another server holds "
            "the port? choose another with --port)"
            if exc.errno == errno.EADDRINUSE
            else f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        ) from exc
    sock.set_inheritable(True)
    return sock


def _lease(text: str) -> str:
    lease_ref(text)
    return text


def lease_option(help_text: str) -> Callable[[F], F]:
    """The ``--lease NAMESPACE/NAME`` option of ``serve`` and ``fallback`` (default
    :data:`~eams.kube.names.MARKET_LEASE`), checked by :func:`~eams.kube.lease.lease_ref`."""
    return click.option(
        "--lease",
        default=MARKET_LEASE,
        show_default=True,
        type=ValueType(_lease, "NAMESPACE/NAME"),
        help=help_text,
    )


def _workers(text: str) -> int:
    workers = int(text)
    check_one_process(workers, None)
    return workers


class _Stop:
    """SIGTERM → the uvicorn server's graceful exit, before, while and after it runs."""

    def __init__(self) -> None:
        self.server: Any = None
        self.requested = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        if self.server is not None:
            self.server.should_exit = True


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8888,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="TCP port to listen on (0: a free one).",
)
@click.option(
    "--mode",
    type=click.Choice(["shadow", "active"]),
    default="shadow",
    show_default=True,
    help="shadow: neutral answers, recommendations recorded; active: serve the auction.",
)
@click.option(
    "--calibrations",
    "calibrations_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Folder of per-node calibration files (NAME.json); needed for readiness.",
)
@click.option(
    "--window-ms",
    default=200.0,
    show_default=True,
    type=FiniteFloatRange(min=0),
    help="Batch window W, ms (0: none).",
)
@click.option(
    "--watch/--no-watch",
    default=False,
    show_default=True,
    help="Watch nodes and pods on the API server (in-cluster account, else KUBECONFIG).",
)
@click.option(
    "--floor-taint/--no-floor-taint",
    default=True,
    show_default=True,
    help="Active mode with --watch: taint a node under its power-headroom floor NoSchedule "
    "(eams.io/power-headroom-low) until it recovers.",
)
@click.option(
    "--record",
    "record_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the decision record: FILE.jsonl (rotated beside it) or a folder "
    "(decisions.jsonl in it); served as GET /decisions, read by eams explain.",
)
@click.option(
    "--record-max-file-bytes",
    type=click.IntRange(min=1024),
    default=None,
    help="Rotate the record file before it passes this size [default: 64 MiB].",
)
@click.option(
    "--record-max-file-age-s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Rotate the record file when its first record is this old, s [default: 3600].",
)
@click.option(
    "--record-max-total-bytes",
    type=click.IntRange(min=2048),
    default=None,
    help="Bound on the record's files together; the oldest go first [default: 1 GiB].",
)
@click.option(
    "--annotate/--no-annotate",
    default=True,
    show_default=True,
    help="With --record and --watch: write the eams.io/* annotations (cleared node, price, "
    "...) onto each decided pod once it is bound, in both modes.",
)
@click.option(
    "--prioritize-answer",
    type=click.Choice(["deciding", "all"]),
    default="deciding",
    show_default=True,
    help="What /prioritize lists: only the nodes scoring 10 (they alone decide under the "
    "shipped weight 130), or every candidate with its score (for a weight under 120).",
)
@click.option(
    "--market-wakes/--no-market-wakes",
    default=True,
    show_default=True,
    help="Active: hold a pod (/filter answers no node) for the asleep node whose bid, wake "
    "energy and wait priced in, beats every awake bid, and ask the power manager to wake it "
    "(node annotation eams.io/wake-request). Needs filterVerb in the scheduler config.",
)
@click.option(
    "--release-gates/--no-release-gates",
    default=True,
    show_default=True,
    help="With --watch: clear the pods carrying the eams.io/market scheduling gate in their "
    "batch window, then remove the gate and (active) pin each to its cleared node, which "
    "kube-scheduler then binds without calling the extender; shadow mode, --window-ms 0 and "
    "pods the market cannot judge are released unpinned.",
)
@lease_option(
    "With --watch and --release-gates: the Lease renewed every second while the extender is "
    "ready; once it lapses, `eams extender fallback` releases the gated pods unpinned."
)
@log_level_option("Log level of the server (uvicorn).")
@click.option(
    "--workers",
    default="1",
    show_default=True,
    type=ValueType(_workers, "INTEGER"),
    help="Server processes: only 1 (the extender's state is in-process; see the README).",
)
def serve(
    host: str,
    port: int,
    mode: Literal["shadow", "active"],
    calibrations_dir: Path | None,
    window_ms: float,
    watch: bool,
    floor_taint: bool,
    record_path: Path | None,
    record_max_file_bytes: int | None,
    record_max_file_age_s: float | None,
    record_max_total_bytes: int | None,
    annotate: bool,
    prioritize_answer: Literal["deciding", "all"],
    market_wakes: bool,
    release_gates: bool,
    lease: str,
    log_level: str,
    workers: int,  # only 1 gets here: its type refuses more
) -> None:
    """Serve /filter and /prioritize to kube-scheduler (extender v1), plus /telemetry,
    /healthz, /readyz and /metrics, in one process.

    Runs until SIGTERM or Ctrl-C; after a SIGTERM it shuts down cleanly and exits 0.

    \f
    Raises
    ------
    ExtenderConfigError, RecordConfigError
        A bad setting, calibration file or record folder, more than one worker asked for by
        ``WEB_CONCURRENCY``, or an address it cannot listen on (a port in use), said before
        uvicorn starts; printed as one line by the ``eams`` command (exit 1). ``--workers``
        above 1, a missing ``--calibrations`` folder and a negative ``--window-ms`` are usage
        errors (exit 2).
    """
    if calibrations_dir is not None and not calibrations_dir.is_dir():
        # checked here, not by click.Path(exists=True): the Deployment's arguments name the
        # mounted calibrations' path, and tests parse them where it is not mounted
        raise click.BadParameter(
            f"{calibrations_dir} is not a folder", param_hint="'--calibrations'"
        )
    stop = _Stop()
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        _serve(
            stop,
            Settings(
                mode=mode,
                window_ms=window_ms,
                calibrations_dir=calibrations_dir,
                taint_floor=floor_taint,
                record=None
                if record_path is None
                else record_settings(
                    record_path,
                    record_max_file_bytes,
                    record_max_file_age_s,
                    record_max_total_bytes,
                ),
                annotate=annotate,
                prioritize_answer=prioritize_answer,
                market_wakes=market_wakes,
                release_gates=release_gates,
                lease=lease,
            ),
            host,
            port,
            watch,
            log_level,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)


def _serve(
    stop: _Stop, settings: Settings, host: str, port: int, watch: bool, log_level: str
) -> None:
    check_one_process(1, os.environ.get(WORKERS_ENV))
    import uvicorn

    from eams.scheduler.extender.app import create_app
    from eams.scheduler.extender.watch import start_watch

    app = create_app(settings, on_startup=start_watch if watch else None)
    listening = listen(host, port)  # before uvicorn: a port in use is one line, exit 1
    # Everything loaded so far (FastAPI, pydantic, numpy/scipy, calibrations) lives as long as
    # the process: frozen out of the collector's sight, a full collection no longer walks it on
    # the request path (the tail of /filter and /prioritize). Collected first so no garbage
    # is frozen with it.
    gc.collect()
    gc.freeze()
    # workers=1 given, so uvicorn does not read WEB_CONCURRENCY itself
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level.lower(),
        access_log=False,
        workers=1,
        proxy_headers=False,  # kube-scheduler and the agents call it directly; nothing reads
        # the client address, and the middleware is one more layer on every call
    )
    stop.server = server = uvicorn.Server(config)
    server.should_exit = stop.requested
    try:
        server.run(sockets=[listening])  # uvicorn restores `stop` as the SIGTERM handler,
        # then re-raises into it
    finally:
        listening.close()
    if not server.started and not stop.requested:
        raise ExtenderConfigError(
            f"the extender did not start on {host}:{port} (the log above says why)"
        )


@click.command()
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Kubeconfig to act as [default: $KUBECONFIG, ~/.kube/config, else the pod's "
    "service account].",
)
@lease_option("The Lease the extender renews while it is ready (eams extender serve --lease).")
@click.option(
    "--period-s",
    default=PERIOD_S,
    show_default=True,
    type=FiniteFloatRange(min=0.05, max=10.0),
    help="How often the Lease is read and, once it has lapsed, the gated pods listed, s.",
)
@click.option(
    "--stuck-after-s",
    default=STUCK_AFTER_S,
    show_default=True,
    type=FiniteFloatRange(min=10.0),
    help="Release a pod the market's gate alone has held this long whatever the Lease says, s "
    "(a release the extender gave up on).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Serve Prometheus metrics (eams_gate_fallback_*) on this port [default: none].",
)
@log_level_option()
def fallback(
    kubeconfig: Path | None,
    lease: str,
    period_s: float,
    stuck_after_s: float,
    metrics_port: int | None,
    log_level: str,
) -> None:
    """Release the pods waiting at the eams.io/market scheduling gate to kube-scheduler's
    default path, unpinned, while the extender cannot (its Lease has lapsed: crashed, hung,
    blind or not ready) — AR-5 for the gate integration — and any the gate has held for
    --stuck-after-s. Runs until SIGTERM or Ctrl-C (exit 0).

    \f
    Raises
    ------
    KubeConfigError, ExtenderConfigError
        No Kubernetes API configured (``eams.kube.client``), or the Lease or the pods cannot be
        read at start (RBAC, unreachable); one line, exit 1.
    """
    import threading

    from eams.kube.client import coordination_api, core_api, load_configuration
    from eams.scheduler.extender.fallback import GateFallback

    configure_logging(log_level, "%(asctime)s %(levelname)s %(message)s")
    core = core_api(load_configuration(kubeconfig))
    keeper = GateFallback(
        core, coordination_api(core), lease, Settings.scheduler_name, stuck_after_s
    )
    keeper.check_access()
    if metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, registry=keeper.metrics.registry)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        keeper.run(stop, period_s)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # ``python -m eams.scheduler.extender.cli``: no other component loads
    from eams.cli import run_cli

    run_cli(serve, "eams extender serve")
