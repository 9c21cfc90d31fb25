"""Is the node back? Its agent answering again, and Kubernetes calling it Ready.

A probe is a callable returning True (back), False (not yet) — never raising for a node that
is down, since being down is what it is there to see.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx

from eams.kube.errors import ApiUnreachable

Probe = Callable[[], bool]
"""``() -> bool``: True once the node is back."""


@dataclass(frozen=True, slots=True)
class AgentProbe:
    """True when ``url`` (the node's agent metrics, ``http://NODE:9101/metrics``) answers 2xx
    within ``timeout_s``: the agent runs, so the node reports again."""

    url: str
    timeout_s: float = 0.5

    def __call__(self) -> bool:
        try:
            return httpx.get(self.url, timeout=self.timeout_s).is_success
        except httpx.HTTPError:
            return False


@dataclass(frozen=True, slots=True)
class ReadyProbe:
    """True when the Kubernetes Node ``node``'s Ready condition is True.

    ``ready`` is :meth:`eams.kube.nodeview.Cluster.ready`; an API that stops answering reads as not
    ready (the measurement notes it and ends the Ready times)."""

    ready: Callable[[str], bool | None]
    node: str

    def __call__(self) -> bool:
        try:
            return self.ready(self.node) is True
        except ApiUnreachable:
            return False
