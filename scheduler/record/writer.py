"""The record writer: callers hand records to a bounded in-memory queue, a thread writes them.

Guarantees (README.md has the table):

- :meth:`Recorder.submit` never blocks and never raises: it appends to a ``collections.deque``
  (atomic in CPython, no lock) or, when the queue holds ``max_queue_records``, drops the record
  and counts it (``eams_record_dropped_total{reason="queue_full"}``). Encoding and I/O happen
  on the writer thread.
- The thread wakes every ``flush_interval_s`` (sooner when the queue is half full), encodes the
  whole backlog with msgspec and writes it with ``os.write`` (which releases the GIL). A write
  that fails keeps the whole lines that reached the file (the rest is truncated away, so every
  file stays valid JSON lines) and drops the others: ``disk_full`` for ENOSPC/EDQUOT,
  ``write_error`` otherwise. Nothing propagates to the caller.
- Files rotate when the next write would pass ``max_file_bytes`` or the file's first record is
  ``max_file_age_s`` old; the prefix's files stay under ``max_total_bytes``: at each rotation
  the oldest are deleted until they and a full active file fit.
  A non-empty active file left by an earlier run is rotated at start.
- One writer per folder and prefix (an ``flock`` on ``.<prefix>.lock``); :meth:`Recorder.close`
  writes what is queued, then closes the file and the lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from eams.scheduler.record import files
from eams.scheduler.record.errors import RecordConfigError
from eams.scheduler.record.metrics import RecordMetrics, ThreadCpu
from eams.scheduler.record.schema import Placement, Power, Record, encode_lines

log = logging.getLogger(__name__)

_FULL = (errno.ENOSPC, errno.EDQUOT)
_CHUNK_RECORDS = 512  # records encoded per msgspec call (bounds the bytes built at once)
_LOG_EVERY_S = 60.0


@dataclass(frozen=True)
class WriterSettings:
    """Where and how much the writer keeps.

    Attributes
    ----------
    folder : Path
        Created if missing.
    prefix : str
        File-name stem (:func:`.files.check_prefix`): ``decisions`` (extender), ``power``.
    max_file_bytes : int
        Rotate before a file passes this size (a single line longer than it gets a file alone).
    max_file_age_s : float
        Rotate a file whose first record is this old.
    max_total_bytes : int
        Bound on the prefix's files together (≥ 2 × ``max_file_bytes``).
    max_queue_records : int
        Records waiting for the thread before new ones are dropped.
    flush_interval_s : float
        How often the thread writes the backlog, s (the staleness of what a reader sees). 1 s:
        a wake-up of the thread costs ~0.1 ms of CPU on the 2-core test VM, and 0.25 → 1 s took
        its share from 0.016 to 0.007 ms a placement at 100 pods/s (2026-12-04).
    """

    folder: Path
    prefix: str = "decisions"
    max_file_bytes: int = 64 * 2**20
    max_file_age_s: float = 3600.0
    max_total_bytes: int = 1 * 2**30
    max_queue_records: int = 100_000
    flush_interval_s: float = 1.0

    def validate(self) -> None:
        """Raise :class:`RecordConfigError` naming every bad setting at once."""
        problems = []
        try:
            files.check_prefix(self.prefix)
        except ValueError as exc:
            problems.append(str(exc))
        if not self.max_file_bytes >= 1024:
            problems.append(f"max_file_bytes = {self.max_file_bytes}: must be ≥ 1024")
        if not self.max_total_bytes >= 2 * self.max_file_bytes:
            problems.append(
                f"max_total_bytes = {self.max_total_bytes}: must be ≥ 2 × max_file_bytes "
                f"({2 * self.max_file_bytes})"
            )
        if not self.max_file_age_s > 0:
            problems.append(f"max_file_age_s = {self.max_file_age_s}: must be > 0")
        if not self.max_queue_records >= 1:
            problems.append(f"max_queue_records = {self.max_queue_records}: must be ≥ 1")
        if not 0 < self.flush_interval_s <= 60:
            problems.append(f"flush_interval_s = {self.flush_interval_s}: must be in (0, 60]")
        if problems:
            raise RecordConfigError("record writer: " + "; ".join(problems))


class _WriteFailed(Exception):
    def __init__(self, reason: str, error: OSError, lines: int) -> None:
        super().__init__(reason)
        self.reason, self.error, self.lines = reason, error, lines


class Recorder:
    """Writes records as JSON lines from a background thread (see the module docstring).

    Parameters
    ----------
    settings : WriterSettings
    metrics : RecordMetrics, optional
        Where to count (a private registry when not given).
    clock : callable
        Epoch seconds, for rotated file names.

    Raises
    ------
    RecordConfigError
        A bad setting, a folder that cannot be created or written, or another writer holding
        the folder's prefix.
    """

    def __init__(
        self,
        settings: WriterSettings,
        metrics: RecordMetrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        settings.validate()
        self.settings = settings
        self.metrics = metrics or RecordMetrics()
        self._clock = clock
        self._queue: deque[Record] = deque()
        self._max = settings.max_queue_records
        self._wake_at = max(1, self._max // 2)
        self._wake = threading.Event()
        self._flushes: deque[threading.Event] = deque()
        self._closed = False
        self._logged: dict[str, float] = {}
        folder = settings.folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(folder / f".{settings.prefix}.lock", os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise RecordConfigError(f"record folder {folder}: {exc.strerror}") from exc
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._lock_fd)
            raise RecordConfigError(
                f"record folder {folder}: prefix {settings.prefix!r} is written by another "
                "process (give each writer its own prefix or folder)"
            ) from exc
        self._path = files.active_path(folder, settings.prefix)
        try:
            self._rotate_leftover()
            self._fd, self._size = self._open()
        except OSError as exc:
            os.close(self._lock_fd)
            raise RecordConfigError(f"record file {self._path}: {exc.strerror}") from exc
        self._first_mono: float | None = None
        self._bound()
        self._thread = threading.Thread(target=self._run, name="eams-record-writer", daemon=True)
        self._thread.start()

    # ---- the caller's side ------------------------------------------------------------------

    def submit(self, record: Record) -> bool:
        """Queue one record; ``False`` if it was dropped (queue full, or closed). Never blocks
        and never raises."""
        queue = self._queue
        if self._closed or len(queue) >= self._max:
            self._drop_at_submit(record)
            return False
        queue.append(record)
        if len(queue) == self._wake_at:
            self._wake.set()
        return True

    def submit_all(self, records: Iterable[Record]) -> int:
        """Queue several records (a window's placements); returns how many were queued."""
        return sum(self.submit(r) for r in records)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every record submitted before this call is written (or dropped);
        ``False`` on timeout. For shutdown and tests, not for the hot path."""
        if self._closed or not self._thread.is_alive():
            return not self._queue
        done = threading.Event()
        self._flushes.append(done)
        self._wake.set()
        return done.wait(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is queued, stop the thread, close the file and release the folder."""
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        self._thread.join(timeout_s)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        with contextlib.suppress(OSError):
            os.close(self._lock_fd)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def path(self) -> Path:
        """The file being appended to."""
        return self._path

    def _drop_at_submit(self, record: Record) -> None:
        reason = "closed" if self._closed else "queue_full"
        self.metrics.dropped.labels(reason).inc()
        if isinstance(record, Placement | Power):
            self.metrics.decisions.labels(_kind(record), record.mode).inc()
        self._warn(reason, f"record dropped ({reason})")

    # ---- the writer thread ------------------------------------------------------------------

    def _run(self) -> None:
        interval = self.settings.flush_interval_s
        cpu = ThreadCpu(self.metrics.cpu.labels("writer"))
        while True:
            self._wake.wait(interval)
            self._wake.clear()
            closing = self._closed
            waiters = [self._flushes.popleft() for _ in range(len(self._flushes))]
            try:
                self._write_backlog()
                self._rotate_if_old()
            except Exception:  # a bug must not kill the thread and stall every caller
                log.exception("record writer: unexpected error (records may be lost)")
            cpu.count()
            for waiter in waiters:
                waiter.set()
            if closing and not self._queue:
                for waiter in self._flushes:
                    waiter.set()
                return

    def _write_backlog(self) -> None:
        queue = self._queue
        batch = [queue.popleft() for _ in range(len(queue))]
        self.metrics.queue.set(len(queue))
        for start in range(0, len(batch), _CHUNK_RECORDS):
            self._write_records(batch[start : start + _CHUNK_RECORDS])

    def _write_records(self, records: list[Record]) -> None:
        kinds = [_kind(r) for r in records]
        m = self.metrics
        decided = Counter(
            (kind, r.mode)
            for r, kind in zip(records, kinds, strict=True)
            if isinstance(r, Placement | Power)
        )
        for (kind, mode), n in decided.items():
            m.decisions.labels(kind, mode).inc(n)
        try:
            written = self._write_lines(encode_lines(records))
        except _WriteFailed as failed:
            written = failed.lines
            lost = len(records) - written
            m.dropped.labels(failed.reason).inc(lost)
            self._warn(
                failed.reason, f"{lost} records dropped writing {self._path}: {failed.error}"
            )
        for kind, n in Counter(kinds[:written]).items():
            m.written.labels(kind).inc(n)

    def _write_lines(self, data: bytes) -> int:
        """Write ``data`` (whole lines), rotating by size between lines; returns the lines
        written. Raises :class:`_WriteFailed` (``lines``: those written before) on failure."""
        limit = self.settings.max_file_bytes
        pos, lines = 0, 0
        while pos < len(data):
            room = limit - self._size
            end = len(data) if len(data) - pos <= room else data.rfind(b"\n", pos, pos + room) + 1
            if end <= pos and not (self._size > 0 and self._rotate()):
                end = data.index(b"\n", pos) + 1  # longer than a file: it gets one alone
            if end <= pos:
                continue  # rotated: the next file has room
            try:
                self._write(data, pos, end)
            except _WriteFailed as failed:
                failed.lines += lines
                raise
            lines += data.count(b"\n", pos, end)
            pos = end
            if self._size >= limit:
                self._rotate()
        return lines

    def _write(self, data: bytes, pos: int, end: int) -> None:
        """Append ``data[pos:end]``; on failure keep the whole lines that reached the file."""
        start, done = self._size, 0
        view = memoryview(data)[pos:end]
        try:
            while done < len(view):
                done += os.write(self._fd, view[done:])
        except OSError as exc:
            keep = data.rfind(b"\n", pos, pos + done) + 1 - pos if done else 0
            keep = max(keep, 0)
            if keep < done:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, start + keep)
            self._size = start + keep
            if keep:
                self.metrics.written_bytes.inc(keep)
            reason = "disk_full" if exc.errno in _FULL else "write_error"
            raise _WriteFailed(reason, exc, data.count(b"\n", pos, pos + keep)) from exc
        if self._size == 0:
            self._first_mono = time.monotonic()
        self._size += done
        self.metrics.written_bytes.inc(done)

    def _rotate_if_old(self) -> None:
        first = self._first_mono
        if first is not None and time.monotonic() - first >= self.settings.max_file_age_s:
            self._rotate()

    def _rotate(self) -> bool:
        """Start a new file; ``False`` (and keep appending to this one) if that fails."""
        folder, prefix = self.settings.folder, self.settings.prefix
        try:
            os.rename(self._path, files.unique_rotated_path(folder, prefix, self._clock()))
            new_fd, size = self._open()
        except OSError as exc:
            self._warn("rotate", f"cannot rotate {self._path}: {exc}; appending to it")
            return False
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd, self._size, self._first_mono = new_fd, size, None
        self.metrics.rotations.inc()
        self._bound()
        return True

    def _rotate_leftover(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            stat = self._path.stat()
            if stat.st_size:
                folder, prefix = self.settings.folder, self.settings.prefix
                os.rename(self._path, files.unique_rotated_path(folder, prefix, stat.st_mtime))

    def _open(self) -> tuple[int, int]:
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return fd, os.fstat(fd).st_size

    def _bound(self) -> None:
        """Delete old files so that they and the active file at its largest fit the bound."""
        s = self.settings
        active = max(self._size, s.max_file_bytes)
        deleted = files.enforce_bound(s.folder, s.prefix, active, s.max_total_bytes)
        if deleted:
            self.metrics.deleted_files.inc(deleted)

    def _warn(self, key: str, message: str) -> None:
        now = time.monotonic()
        if now - self._logged.get(key, -_LOG_EVERY_S) >= _LOG_EVERY_S:
            self._logged[key] = now
            log.warning("record writer: %s", message)


def _kind(record: Record) -> str:
    kind: str = record.__struct_config__.tag  # type: ignore[assignment]
    return kind
