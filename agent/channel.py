"""One sink's delivery thread: live writes, spooling while the sink is down, ordered replay.

Order is kept by one rule: new records are never written while older ones wait in the spool.
The thread first replays the spool (oldest first, ``batch_size`` at a time, each batch marked
done only after the sink acknowledged it), then writes the records that arrived meanwhile. When a
write fails with a retryable :class:`~eams.agent.errors.SinkError`, the batch and everything
behind it go to the spool and the thread waits (exponential backoff 1, 2, 4 … ``max_backoff_s``
seconds, or the server's ``Retry-After``); records arriving during the wait go straight to the
spool, so they survive a restart. A non-retryable error (the server rejects the points) drops
that batch, counted with reason ``rejected``: resending it could only block the queue.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from eams.agent.errors import SinkError
from eams.agent.metrics import AgentMetrics
from eams.agent.sinks.base import Sink
from eams.agent.spool import Spool

log = logging.getLogger(__name__)

FIRST_BACKOFF_S = 1.0


class SinkChannel:
    """Deliver encoded records to one sink from a background thread.

    Parameters
    ----------
    sink : Sink
        The destination; its :meth:`~.sinks.base.Sink.close` is called by :meth:`stop`.
    spool : Spool
        This sink's spool; closed by :meth:`stop`.
    metrics : AgentMetrics
        Updated with spool depth, written points, write errors and drops.
    batch_size : int
        Records per write request.
    max_backoff_s : float
        Longest wait between retries (s).
    """

    def __init__(
        self,
        sink: Sink,
        spool: Spool,
        metrics: AgentMetrics,
        *,
        batch_size: int,
        max_backoff_s: float,
    ):
        self.sink = sink
        self.spool = spool
        self._metrics = metrics
        self._batch_size = batch_size
        self._max_backoff_s = max_backoff_s
        self._inbox: queue.SimpleQueue[list[str]] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._backoff_s = 0.0
        self._retry_at = 0.0
        self._thread = threading.Thread(target=self._run, name=f"sink-{sink.name}", daemon=True)
        metrics.add_sink(sink.name)
        self._update_depth()

    def start(self) -> None:
        """Start the delivery thread (it first replays whatever the spool holds)."""
        self._thread.start()

    def submit(self, records: list[str]) -> None:
        """Queue records (oldest first) for delivery; returns at once."""
        self._inbox.put(records)
        self._wake.set()

    def request_stop(self) -> None:
        """Ask the delivery thread to flush and end; returns at once (see :meth:`stop`)."""
        self._stopping.set()
        self._wake.set()

    def stop(self, timeout_s: float) -> None:
        """Flush and close: a last write of the queued records if the spool is empty and the
        sink is up, else they are spooled for the next start; then close sink and spool.

        ``timeout_s`` must cover a write in flight plus the last one (2 × the sink's
        timeout): records still held in memory when it runs out are lost with the process.
        """
        self.request_stop()
        if self._thread.ident is not None:  # started
            self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.error("sink %s: delivery did not stop within %.0f s", self.sink.name, timeout_s)
            return
        self.sink.close()
        self.spool.close()

    def _run(self) -> None:
        buffer: list[str] = []
        while True:
            self._wake.clear()
            stopping = self._stopping.is_set()
            while not self._inbox.empty():
                buffer.extend(self._inbox.get())
            if time.monotonic() >= self._retry_at:
                self._deliver(buffer, replay=not stopping)
            self._to_spool(buffer)  # whatever is left: the sink is down (or we are stopping)
            if stopping:
                return
            wait_s = self._retry_at - time.monotonic()
            self._wake.wait(wait_s if wait_s > 0 else None)

    def _deliver(self, buffer: list[str], *, replay: bool) -> None:
        """Replay the spool, then write ``buffer`` (emptied as it is acknowledged)."""
        while self.spool.depth_points:
            if not replay or self._stopping.is_set():
                return  # keep order: the buffer goes behind the spool
            rows = self.spool.peek(self._batch_size)
            if not rows:
                self._update_depth()  # a corrupted file may have been replaced by an empty one
                if self.spool.depth_points:
                    return  # the spool file cannot be read now; retry later
                break
            if not self._send([record for _, record in rows]):
                return
            self.spool.ack(rows)
            self._update_depth()
        while buffer:
            chunk = buffer[: self._batch_size]
            if not self._send(chunk):
                return
            del buffer[: len(chunk)]

    def _send(self, records: list[str]) -> bool:
        """One write; True when the records are done with (acknowledged, or rejected)."""
        error = self._write(records)
        if error is None:
            self._backoff_s = 0.0
            self._metrics.written.labels(self.sink.name).inc(len(records))
            return True
        self._metrics.write_errors.labels(self.sink.name).inc()
        if not error.retryable:
            log.error("%s; %d records dropped", error, len(records))
            self._metrics.dropped.labels(self.sink.name, "rejected").inc(len(records))
            return True
        self._backoff_s = min(self._max_backoff_s, max(FIRST_BACKOFF_S, 2 * self._backoff_s))
        delay_s = error.retry_after_s if error.retry_after_s is not None else self._backoff_s
        self._retry_at = time.monotonic() + delay_s
        log.warning("%s; spooling, next try in %.1f s", error, delay_s)
        return False

    def _write(self, records: list[str]) -> SinkError | None:
        try:
            self.sink.write(records)
        except SinkError as exc:
            return exc
        except Exception as exc:  # a sink bug must not end delivery: spool and retry
            log.exception("sink %s: unexpected error", self.sink.name)
            return SinkError(f"{self.sink.name}: {exc!r}", retryable=True)
        return None

    def _to_spool(self, buffer: list[str]) -> None:
        if not buffer:
            return
        result = self.spool.append(buffer)
        buffer.clear()
        for reason, count in result.dropped.items():
            self._metrics.dropped.labels(self.sink.name, reason).inc(count)
        self._update_depth()

    def _update_depth(self) -> None:
        if lost := self.spool.take_lost():
            self._metrics.dropped.labels(self.sink.name, "spool_error").inc(lost)
        self._metrics.spool_points.labels(self.sink.name).set(self.spool.depth_points)
        self._metrics.spool_bytes.labels(self.sink.name).set(self.spool.depth_bytes)
