"""A bounded on-disk spool per sink: SQLite (stdlib ``sqlite3``), one file per sink.

Records (the sink's encoded strings, see :mod:`eams.agent.sinks.base`) are kept in arrival
order under an increasing row id. A replay reads the oldest rows (:meth:`Spool.peek`), writes
them, and only after the sink acknowledged them advances a stored watermark
(:meth:`Spool.ack`): an acknowledged point is never sent again. If the agent dies between the
acknowledgement and the watermark update, the same rows are sent once more on restart; for
InfluxDB that is harmless, because a point's identity is measurement + tag set + timestamp and
writing it again with the same fields overwrites it (InfluxDB docs, "Duplicate points"), and
the timestamps in the stored lines are the original measured ones.

Bounds: ``max_points`` and/or ``max_bytes`` (bytes of stored records; the file itself is a
little larger). When full, ``drop_oldest`` deletes the oldest rows to make room and
``drop_newest`` refuses the newest incoming records; either way the count is returned.
A full disk (SQLITE_FULL, ENOSPC) or another SQLite failure never raises: the records are
reported as dropped with reason ``disk_full`` or ``spool_error``, and the spool retries the
disk on the next call.

A corrupted file (SQLITE_CORRUPT, SQLITE_NOTADB: truncated, overwritten, a torn copy), found
when opening or reading it, is renamed aside to ``<name>.sqlite.corrupt-<UTC time>`` (kept for
an operator; :func:`sqlite3` ``.recover`` may salvage rows) and a fresh spool starts. The records
it held are counted lost (:meth:`Spool.take_lost`). Without this, a damaged file would make the
spool unusable for good: every later outage would lose all its records, and a file that opens
but cannot be read would block its sink's delivery forever.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

SpoolPolicy = Literal["drop_oldest", "drop_newest"]

#: Size the WAL file is truncated to after a checkpoint (bytes).
WAL_LIMIT_BYTES = 4 * 1024 * 1024

#: SQLite result codes that mean the file is damaged (sqlite.org/rescode.html): 11, 26.
_CORRUPT = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


@dataclass
class AppendResult:
    """What :meth:`Spool.append` did with the records it was given.

    Attributes
    ----------
    stored : int
        Records now in the spool.
    dropped : dict of str to int
        Records lost, by reason: ``spool_full`` (the policy dropped them, incoming or oldest),
        ``disk_full`` (ENOSPC), ``spool_error`` (any other SQLite failure).
    """

    stored: int = 0
    dropped: dict[str, int] = field(default_factory=dict)


class Spool:
    """One sink's spool file.

    Parameters
    ----------
    path : Path
        The SQLite file (created with its directory when missing).
    max_points, max_bytes : int or None
        Bounds; at least one must be given.
    policy : {"drop_oldest", "drop_newest"}
        What to drop when full.

    Attributes
    ----------
    depth_points, depth_bytes : int
        Records and record bytes held now.
    """

    def __init__(
        self,
        path: Path,
        *,
        max_points: int | None,
        max_bytes: int | None,
        policy: SpoolPolicy,
    ):
        if max_points is None and max_bytes is None:
            raise ValueError("a spool needs max_points or max_bytes")
        self.path = path
        self._max_points = max_points
        self._max_bytes = max_bytes
        self._policy = policy
        self._db: sqlite3.Connection | None = None
        self._open_failure = "spool_error"
        self._acked_id = 0  # rows up to this id are acknowledged (table ``acked``)
        self._lost = 0  # records lost with a corrupted file, not yet taken by take_lost()
        self.depth_points = 0
        self.depth_bytes = 0
        self._open()

    def _open(self) -> bool:
        if self._db is not None:
            return True
        opened = self._try_open()
        if not opened and self._open_failure == "corrupt":
            self._quarantine()
            opened = self._try_open()
        return opened

    def _try_open(self) -> bool:
        db = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            # WAL + synchronous=NORMAL: a commit survives the process dying (the agent being
            # killed), the common failure; only an OS crash may lose the last commits.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            # Debian builds SQLite with SECURE_DELETE: deleting a drained spool would zero,
            # i.e. rewrite through the WAL, every page (a WAL as large as the spool, kept until
            # close). The records are telemetry, not secrets. The WAL is cut back to 4 MiB
            # after each checkpoint (sqlite.org/pragma.html#pragma_journal_size_limit).
            db.execute("PRAGMA secure_delete=OFF")
            db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            db.executescript(
                "CREATE TABLE IF NOT EXISTS spool (id INTEGER PRIMARY KEY, record TEXT);"
                "CREATE TABLE IF NOT EXISTS acked (id INTEGER NOT NULL);"
                "INSERT INTO acked SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM acked);"
            )
            (acked_id,) = db.execute("SELECT id FROM acked").fetchone()
            count, size = db.execute(
                "SELECT count(*), total(length(record)) FROM spool WHERE id > ?", (acked_id,)
            ).fetchone()
        except (OSError, sqlite3.Error) as exc:
            if db is not None:
                db.close()
            log.warning("spool %s unavailable: %s", self.path, exc)
            self._open_failure = "corrupt" if _corrupt(exc) else _reason(exc)
            return False
        self._db, self._acked_id = db, int(acked_id)
        self.depth_points, self.depth_bytes = int(count), int(size)
        return True

    def append(self, records: Sequence[str]) -> AppendResult:
        """Store ``records`` (oldest first) after those already held, applying the bound.

        Returns
        -------
        AppendResult
            Never raises for a full spool or a full disk: the losses are in ``dropped``.
        """
        return self._append(records, retry_corrupt=True)

    def _append(self, records: Sequence[str], *, retry_corrupt: bool) -> AppendResult:
        result = AppendResult()
        if not records:
            return result
        if not self._open():
            result.dropped[_reason_of(self._open_failure)] = len(records)
            return result
        assert self._db is not None
        keep = self._fit(list(records), result)
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT INTO spool (record) VALUES (?)", ((r,) for r in keep))
            # drop_oldest with incoming records cut: every held record is older than the cut
            # ones, so none may stay (else a gap would open inside the kept series)
            cut = len(keep) < len(records) and self._policy == "drop_oldest"
            evicted = self._evict(len(keep), sum(len(r) for r in keep), evict_all=cut)
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            if _corrupt(exc) and retry_corrupt:
                self._quarantine()  # then once more, into a fresh file
                return self._append(records, retry_corrupt=False)
            reason = _reason(exc)
            log.warning("spool %s: %s; %d records lost", self.path, exc, len(keep))
            result.dropped[reason] = result.dropped.get(reason, 0) + len(keep)
            return result
        self.depth_points += len(keep) - evicted[0]
        self.depth_bytes += sum(len(r) for r in keep) - evicted[1]
        if evicted[0]:
            result.dropped["spool_full"] = result.dropped.get("spool_full", 0) + evicted[0]
        result.stored = len(keep)
        return result

    def _fit(self, records: list[str], result: AppendResult) -> list[str]:
        """Cut the incoming records to what the bound can hold at all (drop_oldest) or
        what fits beside the held ones (drop_newest)."""
        # No points bound: room for every incoming record (not "len(records) minus the held
        # ones", which refused everything once the spool held more than one batch).
        points_room = self._max_points if self._max_points is not None else len(records)
        bytes_room = self._max_bytes
        if self._policy == "drop_newest":
            if self._max_points is not None:
                points_room -= self.depth_points
            if bytes_room is not None:
                bytes_room -= self.depth_bytes
        keep: list[str] = []
        used = 0
        candidates = records if self._policy == "drop_newest" else reversed(records)
        for record in candidates:
            if len(keep) >= points_room or (
                bytes_room is not None and used + len(record) > bytes_room
            ):
                break
            keep.append(record)
            used += len(record)
        if self._policy == "drop_oldest":
            keep.reverse()
        if len(keep) < len(records):
            result.dropped["spool_full"] = len(records) - len(keep)
        return keep

    def _evict(self, added_points: int, added_bytes: int, *, evict_all: bool) -> tuple[int, int]:
        """Inside the append transaction: delete the oldest rows beyond the bound (all rows
        held before this append when ``evict_all``)."""
        assert self._db is not None
        excess_points = self.depth_points if evict_all else 0
        if self._max_points is not None:
            excess_points = max(excess_points, self.depth_points + added_points - self._max_points)
        excess_bytes = 0
        if self._max_bytes is not None:
            excess_bytes = max(0, self.depth_bytes + added_bytes - self._max_bytes)
        if not excess_points and not excess_bytes:
            return 0, 0
        points = freed = 0
        last_id = None
        rows = self._db.execute(
            "SELECT id, length(record) FROM spool WHERE id > ? ORDER BY id", (self._acked_id,)
        )
        for row_id, size in rows:
            if points >= excess_points and freed >= excess_bytes:
                break
            points, freed, last_id = points + 1, freed + size, row_id
        self._db.execute("DELETE FROM spool WHERE id <= ?", (last_id,))
        return points, freed

    def peek(self, limit: int) -> list[tuple[int, str]]:
        """The oldest ``limit`` records as ``(row id, record)``, without removing them."""
        if self._db is None or not self.depth_points:
            return []
        try:
            return self._db.execute(
                "SELECT id, record FROM spool WHERE id > ? ORDER BY id LIMIT ?",
                (self._acked_id, limit),
            ).fetchall()
        except sqlite3.Error as exc:
            log.warning("spool %s: cannot read: %s", self.path, exc)
            if _corrupt(exc):
                self._quarantine()
                self._open()
            return []

    def ack(self, rows: Sequence[tuple[int, str]]) -> None:
        """Mark ``rows`` (from :meth:`peek`) acknowledged by the sink; they are never peeked
        again.

        The acknowledgement is a one-row watermark update (a per-batch ``DELETE`` costs more
        than the write it follows); the rows themselves are deleted at once when the spool
        runs empty (SQLite's truncate optimisation). If the watermark cannot be stored (a
        full disk), the rows are sent again only if the agent restarts before the next ack:
        InfluxDB absorbs that as an idempotent overwrite.
        """
        if not rows or self._db is None:
            return
        self._acked_id = rows[-1][0]
        self.depth_points -= len(rows)
        self.depth_bytes -= sum(len(record) for _, record in rows)
        try:
            if self.depth_points:
                self._db.execute("UPDATE acked SET id = ?", (self._acked_id,))
            else:
                self._db.executescript("BEGIN; DELETE FROM spool; UPDATE acked SET id = 0; COMMIT;")
                self._acked_id = 0  # ids restart at 1 in the empty table
        except sqlite3.Error as exc:
            self._rollback()
            log.warning("spool %s: cannot record acknowledged rows: %s", self.path, exc)

    def take_lost(self) -> int:
        """Records lost with corrupted files since the previous call (for the drop counter)."""
        lost, self._lost = self._lost, 0
        return lost

    def _quarantine(self) -> None:
        """Move a corrupted file (and its WAL and shared-memory files) aside; count what it
        held as lost; the next :meth:`_open` starts an empty spool."""
        self.close()
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            source = self.path.with_name(self.path.name + suffix)
            try:
                source.rename(aside.with_name(aside.name + suffix))
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.error("spool %s: cannot move the corrupted file aside: %s", source, exc)
        log.error(
            "spool %s is corrupted: moved to %s; its records are lost (%d known); "
            "a new spool starts",
            self.path,
            aside,
            self.depth_points,
        )
        self._lost += self.depth_points
        self._acked_id = self.depth_points = self.depth_bytes = 0

    def _rollback(self) -> None:
        assert self._db is not None
        with contextlib.suppress(sqlite3.Error):  # no transaction open: BEGIN itself failed
            self._db.execute("ROLLBACK")

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._db is not None:
            self._db.close()
            self._db = None


def _corrupt(exc: OSError | sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", None) in _CORRUPT


def _reason_of(open_failure: str) -> str:
    """The drop reason for records refused because the file could not be opened."""
    return "spool_error" if open_failure == "corrupt" else open_failure


def _reason(exc: OSError | sqlite3.Error) -> str:
    """``disk_full`` for ENOSPC / SQLITE_FULL (result code 13, sqlite.org/rescode.html),
    else ``spool_error``."""
    full = (
        exc.errno == errno.ENOSPC
        if isinstance(exc, OSError)
        else getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    )
    return "disk_full" if full else "spool_error"
