"""The extender's heartbeat for its gated pods' fallback (AR-5 on the gate integration).

A pod waiting at the ``eams.io/market`` scheduling gate is out of kube-scheduler's queue until
the extender releases it (``gates.py``): an extender that is down — crashed, hung, or unable to
clear (blind, not ready) — would leave it there, where the extender path's ignorable extender
gives default placement (AR-5). So the extender renews the Lease ``--lease`` (default
``kube-system/eams-market``) every :data:`~eams.kube.lease.RENEW_PERIOD_S` while it is ready
(``/readyz``: calibrated, fed, its watches listed), and ``eams extender fallback``, a process of
its own (``fallback.py``), releases the gated pods unpinned once that Lease has not changed for
its duration.

The renewal is timed on the extender's event loop, the thread that clears: a loop too busy to
renew for :data:`~eams.kube.lease.LEASE_DURATION_S` is not clearing either. The write itself runs
on a thread of its own (not the loop's default executor, which the taint and wake patches share),
with a timeout well inside the Lease's duration, so neither a slow kube-apiserver nor other
writes hold it up; one renewal is in flight at a time. On a clean stop the Lease is let go
(``holderIdentity`` emptied): the fallback takes over at its next read instead of after the
Lease's duration.

RBAC: ``leases`` ``create``, ``patch`` in the Lease's namespace (``deploy/k3s/rbac.yaml``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from eams.kube.lease import RENEW_PERIOD_S, lease_ref, release_lease, renew_lease
from eams.scheduler.extender.service import Extender

log = logging.getLogger(__name__)


def holder_identity() -> str:
    """``spec.holderIdentity``: the pod's name (``POD_NAME``, the Deployment's downward API),
    else ``HOST/PID``."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}/{os.getpid()}"


class Heartbeat:
    """Renew the extender's Lease while it is ready (module docstring).

    Parameters
    ----------
    extender : Extender
        Its ``settings.lease`` (``NAMESPACE/NAME``) and its readiness.
    loop : asyncio.AbstractEventLoop
        The extender's loop: the renewals are timed there.
    coordination : kubernetes.client.CoordinationV1Api
    """

    def __init__(self, extender: Extender, loop: asyncio.AbstractEventLoop, coordination: Any):
        self.extender = extender
        self.loop = loop
        self.coordination = coordination
        self.namespace, self.name = lease_ref(extender.settings.lease)
        self.holder = holder_identity()
        self._timer: asyncio.TimerHandle | None = None
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="lease")
        self._in_flight = False
        self._failing = False
        self._renewed_once = False

    def start(self) -> None:
        """Renew now, then every :data:`~eams.kube.lease.RENEW_PERIOD_S`."""
        self._beat()

    def stop(self) -> None:
        """No more renewals; the Lease is let go if this process held it (a failure to is
        logged: the fallback then takes over once the Lease's duration has passed)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._renewed_once:
            try:
                self._writer.submit(
                    release_lease, self.coordination, self.namespace, self.name
                ).result()
            except Exception as exc:
                log.warning("lease %s/%s: not let go: %s", self.namespace, self.name, exc)
        self._writer.shutdown(wait=False)

    def _beat(self) -> None:
        self._timer = self.loop.call_later(RENEW_PERIOD_S, self._beat)
        if self._in_flight or self.extender.readiness():
            return  # not ready: let the Lease lapse, so the fallback releases the gated pods
        self._in_flight = True
        future = self.loop.run_in_executor(
            self._writer, renew_lease, self.coordination, self.namespace, self.name, self.holder
        )
        future.add_done_callback(self._renewed)

    def _renewed(self, future: asyncio.Future[None]) -> None:
        self._in_flight = False
        error = future.exception()
        if error is not None and not self._failing:
            log.warning("lease %s/%s: renewal failed: %s", self.namespace, self.name, error)
        elif error is None and self._failing:
            log.info("lease %s/%s: renewed again", self.namespace, self.name)
        self._failing = error is not None
        self._renewed_once |= error is None
