"""One sink's delivery thread: live writes, spooling while the sink is down or behind, ordered
replay.

Order is kept by one rule: new records are never written while older ones wait in the spool.
The thread first replays the spool (oldest first, ``batch_size`` at a time, each batch marked
done only after the sink acknowledged it), then writes the records that arrived meanwhile. When a
write fails with a retryable :class:`~eams.agent.errors.SinkError`, the batch and everything
behind it go to the spool and the thread waits (exponential backoff 1, 2, 4 … ``max_backoff_s``
seconds, or the server's ``Retry-After``); records arriving during the wait go straight to the
spool, so they survive a restart. A non-retryable error (the server rejects the points) drops
that batch, counted with reason ``rejected``: resending it could only block the queue.

Memory holds at most one batch waiting beside the write in flight. When more have arrived (the
sink is slower than production), they are appended to the spool (behind everything in it, so
order holds) and delivered from there: a slow sink's backlog is on disk and counted in
``eams_agent_spool_points``, not held in memory where it would die with the process. The
records in memory are ``eams_agent_queue_points``.

Stopping: a stop request carries a time after which no write starts. Until then the thread
keeps delivering (the spool first, in order); then it spools whatever is still in memory and
ends. A fast sink is thus drained at a stop, and a slow one's backlog is on disk, whatever its
size: the stop takes the time to that deadline plus one write, not the time to write the backlog.
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
        Updated with queue and spool depth, written points, write errors and drops.
    batch_size : int
        Records per write request, and the most records held in memory beside the write in
        flight.
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
        self._held = 0  # records in memory: submitted, neither done with nor spooled
        self._held_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._write_until = 0.0  # monotonic time after which no write starts, once stopping
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
        self._hold(len(records))
        self._inbox.put(records)
        self._wake.set()

    def request_stop(self, write_until: float) -> None:
        """Ask the delivery thread to end; returns at once (see :meth:`stop`).

        Parameters
        ----------
        write_until : float
            Monotonic time (s, :func:`time.monotonic`) after which no write starts; until then
            delivery goes on. The first request counts.
        """
        if self._stopping.is_set():
            return
        self._write_until = write_until
        self._stopping.set()
        self._wake.set()

    def stop(self, timeout_s: float) -> None:
        """End delivery and close: writes go on until the stop request's deadline (half of
        ``timeout_s`` from now when :meth:`request_stop` was not called), what is left is
        spooled for the next start, then the sink and the spool are closed.

        ``timeout_s`` must cover the time to that deadline plus one write. If a write hangs past
        it, the records still in memory (the batch in flight and those that arrived during it)
        are lost with the process; the error line gives their number.
        """
        self.request_stop(time.monotonic() + timeout_s / 2)
        if self._thread.ident is not None:  # started
            self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.error(
                "sink %s: delivery did not stop within %.0f s; %d records held in memory are lost",
                self.sink.name,
                timeout_s,
                self._held,
            )
            return
        self.sink.close()
        self.spool.close()

    def _run(self) -> None:
        buffer: list[str] = []
        while True:
            self._wake.clear()
            stopping = self._stopping.is_set()
            if time.monotonic() >= self._retry_at:
                self._deliver(buffer)
            self._take(buffer)
            self._to_spool(buffer)  # whatever is left: the sink is down (or we are stopping)
            if stopping:
                return
            wait_s = self._retry_at - time.monotonic()
            self._wake.wait(wait_s if wait_s > 0 else None)

    def _deliver(self, buffer: list[str]) -> None:
        """Replay the spool, then write ``buffer`` (emptied as it is acknowledged), taking new
        records between writes. Returns when there is nothing to write, a write failed, or the
        stop request's deadline passed."""
        while True:
            self._take(buffer)
            if len(buffer) > self._batch_size:
                self._to_spool(buffer)  # the sink is behind: its backlog goes to disk
            if self._stopping.is_set() and time.monotonic() >= self._write_until:
                return
            if self.spool.depth_points:  # keep order: the buffer waits behind the spool
                if not self._replay_batch():
                    return
            elif not buffer or not self._send(buffer):
                return
            else:
                self._release(len(buffer))
                buffer.clear()

    def _replay_batch(self) -> bool:
        """Write the spool's oldest batch; True when it was done with (the spool shrank)."""
        rows = self.spool.peek(self._batch_size)
        if not rows:
            self._update_depth()  # a corrupted file may have been replaced by an empty one
            return not self.spool.depth_points  # else the file cannot be read now: later
        if not self._send([record for _, record in rows]):
            return False
        self.spool.ack(rows)
        self._update_depth()
        return True

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

    def _take(self, buffer: list[str]) -> None:
        """Move the submitted records into ``buffer`` (still in memory, in order)."""
        while not self._inbox.empty():
            buffer.extend(self._inbox.get())

    def _to_spool(self, buffer: list[str]) -> None:
        if not buffer:
            return
        result = self.spool.append(buffer)
        self._release(len(buffer))
        buffer.clear()
        for reason, count in result.dropped.items():
            self._metrics.dropped.labels(self.sink.name, reason).inc(count)
        self._update_depth()

    def _hold(self, count: int) -> None:
        with self._held_lock:
            self._held += count
            self._metrics.queue_points.labels(self.sink.name).set(self._held)

    def _release(self, count: int) -> None:
        self._hold(-count)

    def _update_depth(self) -> None:
        if lost := self.spool.take_lost():
            self._metrics.dropped.labels(self.sink.name, "spool_error").inc(lost)
        self._metrics.spool_points.labels(self.sink.name).set(self.spool.depth_points)
        self._metrics.spool_bytes.labels(self.sink.name).set(self.spool.depth_bytes)
