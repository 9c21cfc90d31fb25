"""kube-scheduler 1.36 against a :class:`ControlPlane`: the shipped ``eams-scheduler``
configuration, or a plain one without extenders.

:func:`shipped_config` reads the KubeSchedulerConfiguration that ``deploy/k3s/
scheduler-config.yaml`` ships (a ConfigMap's ``scheduler-config.yaml`` key: profile
``eams-scheduler``, the extender, its weight, the API rate limits) and changes only its
addresses, the kubeconfig and the extender's ``urlPrefix``, so a test runs what a cluster runs.
:func:`reference_config` is the shipped one without its extenders (a benchmark's reference on
the same pods). :func:`plain_config` is kube-scheduler's defaults (profile
``default-scheduler``) with no leader election: the baseline to compare against, since
extenders apply to every profile of a configuration (``../shared/k8s/README.md``).

:class:`KubeScheduler` runs ``kube-scheduler --config=FILE --secure-port=0``: no serving port,
so it counts as started once it logs ``Starting Kubernetes Scheduler`` (its configuration was
accepted; it schedules as soon as its caches fill). The ``kube_scheduler`` fixture starts them
for one test and stops them after it.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.servers._process import ServerProcess
from tests.servers.kube_control_plane import DEPLOY, ControlPlane

SHIPPED_CONFIG = DEPLOY / "scheduler-config.yaml"
STARTED = "Starting Kubernetes Scheduler"
_NAMES = itertools.count()


def shipped_config(kubeconfig: Path, extender_url: str) -> dict[str, Any]:
    """The shipped KubeSchedulerConfiguration with ``clientConnection.kubeconfig`` set to
    ``kubeconfig`` and each extender's ``urlPrefix`` to ``extender_url``; nothing else changed.

    Raises
    ------
    ValueError
        The shipped file has no extender (then there is no address to change).
    """
    configmap = yaml.safe_load(SHIPPED_CONFIG.read_text())
    config = copy.deepcopy(yaml.safe_load(configmap["data"]["scheduler-config.yaml"]))
    if not config.get("extenders"):
        raise ValueError(f"{SHIPPED_CONFIG} configures no extender")
    config.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
    for extender in config["extenders"]:
        extender["urlPrefix"] = extender_url
    return dict(config)


def with_market_wakes(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with every extender's ``filterVerb: filter``: the opt-in that market wakes
    need (the extender's ``/filter`` holds a pod for the asleep node the market chose)."""
    for extender in config.get("extenders") or ():
        extender["filterVerb"] = "filter"
    return config


def reference_config(kubeconfig: Path, scheduler_name: str) -> dict[str, Any]:
    """The shipped KubeSchedulerConfiguration without its ``extenders``, its one profile named
    ``scheduler_name`` and ``clientConnection.kubeconfig`` set to ``kubeconfig``: the same API
    rate limits, ``percentageOfNodesToScore`` and score plugins as the shipped profile, so a
    benchmark that runs both on the same pods measures what the extender costs, nothing else.
    """
    config = shipped_config(kubeconfig, "")
    del config["extenders"]
    (profile,) = config["profiles"]
    profile["schedulerName"] = scheduler_name
    return config


def plain_config(kubeconfig: Path) -> dict[str, Any]:
    """kube-scheduler's defaults (one profile, ``default-scheduler``, no extender), reading
    ``kubeconfig``, without leader election."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(kubeconfig)},
    }


class KubeScheduler(ServerProcess):
    """``kube-scheduler --config=ROOT/NAME.yaml --secure-port=0``, its log ``ROOT/NAME.log``.

    Parameters
    ----------
    binaries : Path
        The unpacked folder (``kube_binaries`` fixture).
    root : Path
        Where the configuration and the log go.
    config : dict
        A KubeSchedulerConfiguration (:func:`shipped_config`, :func:`plain_config`).
    name : str
        Base name of its files.
    """

    start_timeout_s = 60.0

    def __init__(self, binaries: Path, root: Path, config: dict[str, Any], name: str):
        super().__init__()
        self.config = config
        self.config_path = root / f"{name}.yaml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.argv = [str(binaries / "kube-scheduler"), f"--config={self.config_path}",
                     "--secure-port=0"]  # fmt: skip
        self.ready_url = f"(log line {STARTED!r})"
        self.log_path = root / f"{name}.log"

    def answers(self) -> bool:
        """It logged :data:`STARTED`."""
        try:
            return STARTED in self.log_path.read_text(errors="replace")
        except OSError:
            return False

    def log(self) -> str:
        """Everything it logged so far."""
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def kube_scheduler(control_plane: ControlPlane) -> Iterator[Callable[..., KubeScheduler]]:
    """``start(config, name="kube-scheduler") -> KubeScheduler``: start a kube-scheduler with
    ``config`` beside the module's control plane (files in its folder, the name made unique);
    every one started is stopped after the test."""
    started: list[KubeScheduler] = []

    def start(config: dict[str, Any], name: str = "kube-scheduler") -> KubeScheduler:
        scheduler = KubeScheduler(control_plane.binaries, control_plane.root, config,
                                  f"{name}-{next(_NAMES)}")  # fmt: skip
        started.append(scheduler)
        scheduler.start()
        return scheduler

    yield start
    for scheduler in started:
        scheduler.stop()
