"""The one Kubernetes client configuration of every EAMS process.

Precedence (kubectl's, then the pod's own account):

1. an explicit kubeconfig file (``--kubeconfig``, the power inventory's ``kubeconfig``);
2. ``$KUBECONFIG`` (one path or several joined by ``:``, merged as kubectl merges them), else
   ``~/.kube/config`` when it exists;
3. the in-cluster service account (``KUBERNETES_SERVICE_HOST`` and the mounted token).

TLS is verified unless the kubeconfig says ``insecure-skip-tls-verify: true``; then the layer
says so once, when the configuration is loaded (a log warning naming the server and where the
setting came from), and urllib3's ``InsecureRequestWarning`` for that server — one per request —
is silenced.
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from eams.kube.errors import KubeConfigError

log = logging.getLogger("eams.kube")

DEFAULT_KUBECONFIG = Path("~/.kube/config")
_warned_insecure: set[str] = set()


def load_configuration(kubeconfig: str | Path | None = None) -> Any:
    """A ``kubernetes.client.Configuration`` by the precedence of the module docstring.

    Parameters
    ----------
    kubeconfig : path, optional
        An explicit kubeconfig; when given, nothing else is tried.

    Returns
    -------
    kubernetes.client.Configuration

    Raises
    ------
    KubeConfigError
        The chosen source cannot be loaded (missing, not YAML, no current context, no in-cluster
        account); the message names it and why, on one line.
    """
    from kubernetes import client, config

    configuration = client.Configuration()
    from_env = os.environ.get("KUBECONFIG")
    default = DEFAULT_KUBECONFIG.expanduser()
    if kubeconfig is not None:
        source, path = str(kubeconfig), str(kubeconfig)
    elif from_env:
        source, path = f"$KUBECONFIG={from_env}", from_env
    elif default.exists():
        source, path = str(default), str(default)
    else:
        source, path = "the in-cluster service account", None
    try:
        if path is not None:
            config.load_kube_config(path, client_configuration=configuration)
        else:
            config.load_incluster_config(client_configuration=configuration)
    except (config.ConfigException, OSError, yaml.YAMLError) as exc:
        reason = " ".join(str(exc).split())  # a YAML error spans lines; the CLI prints one
        where = (
            source
            if kubeconfig is not None or from_env
            else (f"{source}; no $KUBECONFIG, no {DEFAULT_KUBECONFIG}")
        )
        raise KubeConfigError(f"no Kubernetes API configured ({where}): {reason}") from exc
    if not configuration.verify_ssl:
        _insecure(configuration.host, source)
    return configuration


def core_api(configuration: Any) -> Any:
    """A ``kubernetes.client.CoreV1Api`` on ``configuration`` (:func:`load_configuration`)."""
    from kubernetes import client

    return client.CoreV1Api(client.ApiClient(configuration))


def coordination_api(core: Any) -> Any:
    """A ``kubernetes.client.CoordinationV1Api`` (Leases) on the connection of ``core``, a
    ``CoreV1Api`` (:func:`core_api`)."""
    from kubernetes import client

    return client.CoordinationV1Api(core.api_client)


def _insecure(server: str, source: str) -> None:
    """Say once that TLS to ``server`` is not verified; silence urllib3's warning per request
    to that host."""
    from urllib3.exceptions import InsecureRequestWarning

    host = urlsplit(server).hostname or server
    warnings.filterwarnings(
        "ignore",
        message=rf"Unverified HTTPS request is being made to host '{re.escape(host)}'",
        category=InsecureRequestWarning,
    )
    if server not in _warned_insecure:
        _warned_insecure.add(server)
        log.warning(
            "Kubernetes API at %s: TLS certificate not verified (insecure-skip-tls-verify in %s)",
            server,
            source,
        )
