"""``eams power manage``: the power manager as a long-running service on a real cluster.

Wires the live adapters to :class:`~.manager.PowerManager`: :class:`~.kube_observer.
KubeObserver` (on the watched :class:`~.kube_cache.ClusterCache`) and
:class:`~.kube_marker.KubeMarker` on one :class:`~.kube_client.KubeClient`
(``--kubeconfig``, else the inventory's ``kubeconfig``, else in-cluster / ``$KUBECONFIG``;
``--in-cluster`` skips the inventory's),
:class:`~.actuator.PowerActuator` on the inventory, the calibrations folder, the policy and
manager settings of the config file (:mod:`.config`), a decision record (prefix ``power``,
:class:`eams.scheduler.record.Recorder`) and Prometheus metrics on ``/metrics``: the
manager's (:mod:`.metrics`), the record's and the power actions'
(``eams_power_transitions_total``). It ticks every ``interval_s`` (sooner when the policy names
an instant) until SIGTERM or Ctrl-C, then closes the record.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.registry import Collector

from eams.actuators import transitions
from eams.actuators.inventory import load_inventory
from eams.scheduler.power.actuator import PowerActuator
from eams.scheduler.power.calibrations import read_folder
from eams.scheduler.power.config import load_config
from eams.scheduler.power.errors import KubeApiError, ManagerConfigError
from eams.scheduler.power.kube_cache import ClusterCache
from eams.scheduler.power.kube_client import KubeClient
from eams.scheduler.power.kube_marker import KubeMarker
from eams.scheduler.power.kube_observer import KubeObserver
from eams.scheduler.power.manager import Mode, PowerManager
from eams.scheduler.power.metrics import ManagerMetrics
from eams.scheduler.power.policy import PowerPolicy
from eams.scheduler.record import Recorder, RecordMetrics, WriterSettings

log = logging.getLogger("eams.power.manager")

RECORD_PREFIX = "power"
"""The record's file stem beside the extender's ``decisions`` (scheduler/record/README.md)."""


class _Forward(Collector):
    """Serves another registry's metrics (the power actions' private one) from this one."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator:
        yield from self._registry.collect()


@dataclass
class Service:
    """A built manager and what it owns (close it when done)."""

    manager: PowerManager
    registry: CollectorRegistry
    recorder: Recorder | None
    cache: ClusterCache
    managed: tuple[str, ...] = ()
    """The inventory's nodes that have a calibration."""

    def close(self) -> None:
        """Stop the watches; write what the record has queued and close it."""
        self.cache.close()
        if self.recorder is not None:
            self.recorder.close()


def build(
    inventory_path: Path,
    calibrations_dir: Path,
    *,
    kubeconfig: Path | None = None,
    in_cluster: bool = False,
    mode: Mode = "shadow",
    config_path: Path | None = None,
    record_dir: Path | None = None,
) -> Service:
    """Load everything and build the manager (nothing is observed or switched yet).

    Raises
    ------
    InventoryError, ManagerConfigError
        A bad inventory, calibrations folder or config file; a node of the inventory that no
        calibration names is only logged (it is left out of the fleet).
    KubeConfigError
        No Kubernetes configuration could be loaded.
    KubeApiError
        The nodes, pods or node Leases could not be listed (the watches did not start).
    RecordConfigError
        The record folder is refused (another writer holds it, say).
    """
    inventory = load_inventory(inventory_path)
    calibrations = read_folder(calibrations_dir)
    if not calibrations:
        raise ManagerConfigError(f"--calibrations {calibrations_dir}: no calibration file")
    config = load_config(config_path)
    client = KubeClient(None if in_cluster else kubeconfig or inventory.kubeconfig)
    registry = CollectorRegistry(auto_describe=True)
    registry.register(_Forward(transitions.REGISTRY))
    recorder = None
    if record_dir is not None:
        settings = WriterSettings(folder=record_dir, prefix=RECORD_PREFIX)
        recorder = Recorder(settings, RecordMetrics(registry))
    try:
        cache = ClusterCache(client).start()
    except KubeApiError:
        if recorder is not None:
            recorder.close()
        raise
    manager = PowerManager(
        PowerPolicy(config.policy),
        KubeObserver(cache, inventory, calibrations),
        KubeMarker(client),
        PowerActuator(inventory, client.node),
        recorder=recorder,
        mode=mode,
        config=config.manager,
        metrics=ManagerMetrics(registry),
    )
    uncalibrated = sorted(set(inventory.nodes) - set(calibrations))
    if uncalibrated:
        log.warning("power manager: no calibration for %s: left out", ", ".join(uncalibrated))
    managed = tuple(sorted(set(inventory.nodes) & set(calibrations)))
    return Service(manager, registry, recorder, cache, managed)


def serve(
    service: Service,
    interval_s: float,
    metrics_port: int | None,
    metrics_host: str = "0.0.0.0",
) -> None:
    """Run ``service`` until SIGTERM or Ctrl-C; ``/metrics`` on ``metrics_port`` if given.

    Raises
    ------
    OSError
        The metrics port cannot be bound.
    """
    stop = threading.Event()

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        if metrics_port is not None:
            start_http_server(metrics_port, addr=metrics_host, registry=service.registry)
        log.info(
            "power manager: %s mode, every %g s, nodes %s",
            service.manager.mode,
            interval_s,
            ", ".join(service.managed),
        )
        service.manager.run(stop, interval_s)
    except KeyboardInterrupt:
        stop.set()
    finally:
        signal.signal(signal.SIGTERM, previous)
        service.close()
