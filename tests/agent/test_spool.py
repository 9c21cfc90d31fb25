"""The on-disk spool: order, acknowledgement, bounds with their policies, restart, full disk."""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path

import pytest

from eams.agent.spool import WAL_LIMIT_BYTES, AppendResult, Spool
from tests.agent.conftest import fill


def records(start: int, stop: int) -> list[str]:
    return [
        f"eams_node,node=n power_w={i}.0 {1_700_000_000_000_000_000 + i}"
        for i in range(start, stop)
    ]


def bodies(spool: Spool) -> list[str]:
    return [record for _, record in spool.peek(1_000_000)]


def test_replay_is_in_order_and_acknowledged_rows_never_come_back(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s.sqlite", max_points=1000, max_bytes=None, policy="drop_oldest")
    assert spool.append(records(0, 5)).stored == 5
    assert spool.append(records(5, 8)).stored == 3
    first = spool.peek(4)
    assert [r for _, r in first] == records(0, 4)
    spool.ack(first)
    assert bodies(spool) == records(4, 8)
    assert (spool.depth_points, spool.depth_bytes) == (4, sum(map(len, records(4, 8))))
    spool.close()
    reopened = Spool(tmp_path / "s.sqlite", max_points=1000, max_bytes=None, policy="drop_oldest")
    assert bodies(reopened) == records(4, 8)
    assert reopened.depth_points == 4
    reopened.ack(reopened.peek(10))  # drained: the rows are deleted at once
    assert (reopened.depth_points, reopened.depth_bytes, bodies(reopened)) == (0, 0, [])
    reopened.append(records(8, 10))
    assert bodies(reopened) == records(8, 10)
    reopened.close()
    again = Spool(tmp_path / "s.sqlite", max_points=1000, max_bytes=None, policy="drop_oldest")
    assert bodies(again) == records(8, 10)
    again.close()


def test_drop_oldest_keeps_the_newest_and_counts(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s.sqlite", max_points=10, max_bytes=None, policy="drop_oldest")
    spool.append(records(0, 8))
    result = spool.append(records(8, 14))
    assert (result.stored, result.dropped) == (6, {"spool_full": 4})
    assert bodies(spool) == records(4, 14)
    result = spool.append(records(14, 40))  # more than the whole bound at once
    assert result.dropped == {"spool_full": 26}
    assert bodies(spool) == records(30, 40)


def test_drop_newest_refuses_what_does_not_fit_and_counts(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s.sqlite", max_points=10, max_bytes=None, policy="drop_newest")
    spool.append(records(0, 8))
    result = spool.append(records(8, 14))
    assert (result.stored, result.dropped) == (2, {"spool_full": 4})
    assert bodies(spool) == records(0, 10)


def test_byte_bound(tmp_path: Path) -> None:
    size = len(records(0, 1)[0])
    spool = Spool(tmp_path / "s.sqlite", max_points=None, max_bytes=5 * size, policy="drop_oldest")
    result = spool.append(records(0, 7))
    assert result.dropped == {"spool_full": 2}
    assert bodies(spool) == records(2, 7)
    assert spool.depth_bytes == 5 * size


def test_full_disk_is_counted_not_raised(tiny_disk: Path) -> None:
    spool = Spool(tiny_disk / "s.sqlite", max_points=100_000, max_bytes=None, policy="drop_oldest")
    assert spool.append(records(0, 10)).stored == 10
    filler = fill(tiny_disk)
    result = spool.append(records(10, 20_000))  # more than the whole disk
    assert result.stored == 0
    assert result.dropped == {"disk_full": 19_990}
    assert bodies(spool) == records(0, 10)  # what was stored is intact
    filler.unlink()
    assert spool.append(records(2000, 2005)).stored == 5
    assert bodies(spool) == records(0, 10) + records(2000, 2005)
    spool.close()


def test_spool_created_on_a_full_disk_recovers(tiny_disk: Path) -> None:
    filler = fill(tiny_disk)
    spool = Spool(tiny_disk / "s.sqlite", max_points=100, max_bytes=None, policy="drop_oldest")
    assert spool.append(records(0, 3)).dropped == {"disk_full": 3}
    filler.unlink()
    assert spool.append(records(3, 5)).stored == 2
    assert bodies(spool) == records(3, 5)
    spool.close()


def corrupt(path: Path, keep_header: bool) -> None:
    """Overwrite ``path`` with garbage, or (``keep_header``) its pages after the first 40 KiB
    with 0xEE bytes: the file still opens as SQLite but its b-tree is damaged."""
    if not keep_header:
        path.write_bytes(b"not a database " * 500)
        return
    data = bytearray(path.read_bytes())
    data[40_960 : len(data) - 8192] = b"\xee" * (len(data) - 8192 - 40_960)
    path.write_bytes(bytes(data))


def test_a_corrupted_file_is_moved_aside_and_a_new_spool_starts(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"not a database " * 500)
    spool = Spool(path, max_points=100, max_bytes=None, policy="drop_oldest")
    assert spool.append(records(0, 3)).stored == 3  # not dropped as spool_error for good
    assert bodies(spool) == records(0, 3)
    (aside,) = tmp_path.glob("s.sqlite.corrupt-*")
    assert aside.read_bytes().startswith(b"not a database")  # kept for the operator
    spool.close()


def test_a_truncated_file_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    spool = Spool(path, max_points=100_000, max_bytes=None, policy="drop_oldest")
    spool.append(records(0, 20_000))
    spool.close()
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    reopened = Spool(path, max_points=100_000, max_bytes=None, policy="drop_oldest")
    assert (reopened.depth_points, bodies(reopened)) == (0, [])
    assert reopened.append(records(5, 7)).stored == 2
    assert bodies(reopened) == records(5, 7)
    assert len(list(tmp_path.glob("s.sqlite.corrupt-*"))) == 1
    reopened.close()


def test_a_file_damaged_while_open_does_not_block_the_spool(tmp_path: Path) -> None:
    """Damage found by a read: the spool starts afresh and counts the records it lost, so
    delivery is not stuck behind a spool that can never be read."""
    path = tmp_path / "s.sqlite"
    spool = Spool(path, max_points=100_000, max_bytes=None, policy="drop_oldest")
    spool.append([r + "x" * 150 for r in records(0, 30_000)])  # beyond SQLite's 2 MB cache
    assert spool._db is not None
    spool._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the rows are in the main file now
    corrupt(path, keep_header=True)
    assert spool.peek(100_000) == []
    assert (spool.depth_points, spool.take_lost(), spool.take_lost()) == (0, 30_000, 0)
    assert spool.append(records(30_000, 30_002)).stored == 2
    assert bodies(spool) == records(30_000, 30_002)
    spool.close()


def test_draining_does_not_leave_a_wal_as_large_as_the_spool(tmp_path: Path) -> None:
    """Deleting 15 MB of drained rows must not rewrite them into the WAL (SQLite's
    SECURE_DELETE build option zeroes freed pages) and leave that WAL on disk."""
    path = tmp_path / "s.sqlite"
    spool = Spool(path, max_points=1_000_000, max_bytes=None, policy="drop_oldest")
    for start in range(0, 100_000, 5000):
        spool.append([r + "x" * 100 for r in records(start, start + 5000)])
    while rows := spool.peek(5000):
        spool.ack(rows)
    spool.append(records(0, 2))  # the next write: the drained spool's WAL is reused from here
    wal_bytes = path.with_name("s.sqlite-wal").stat().st_size
    assert path.stat().st_size > 3 * WAL_LIMIT_BYTES  # the spool was larger than the limit
    assert wal_bytes <= WAL_LIMIT_BYTES + 65_536
    spool.close()


def test_drop_newest_with_only_a_byte_bound_keeps_spooling(tmp_path: Path) -> None:
    """Bounded by bytes alone, a drop_newest spool takes batch after batch until the bytes
    are used up (it refused every batch once it held more records than a batch brought)."""
    size = len(records(0, 1)[0])
    spool = Spool(tmp_path / "s.sqlite", max_points=None, max_bytes=10 * size, policy="drop_newest")
    for start in range(0, 8, 2):
        assert spool.append(records(start, start + 2)) == AppendResult(stored=2)
    assert spool.append(records(8, 12)).dropped == {"spool_full": 2}
    assert bodies(spool) == records(0, 10)
    spool.close()


def over(held: list[str], max_points: int | None, max_bytes: int | None) -> bool:
    """Whether ``held`` exceeds the bounds."""
    return (max_points is not None and len(held) > max_points) or (
        max_bytes is not None and sum(map(len, held)) > max_bytes
    )


@pytest.mark.parametrize("seed", range(3))
def test_random_operations_match_a_queue_model(tmp_path: Path, seed: int) -> None:
    """Appends, peeks, acks and reopenings in random order, for each bound and policy, against
    a plain deque holding what the spool should hold (this found the drop_newest byte-bound
    bug above)."""
    rng = random.Random(seed)
    for trial in range(6):
        policy = rng.choice(["drop_oldest", "drop_newest"])
        max_points = rng.choice([None, 5, 20])
        max_bytes = rng.choice([None, 60, 400]) if max_points else rng.choice([60, 400])
        path = tmp_path / f"{trial}.sqlite"
        spool = Spool(path, max_points=max_points, max_bytes=max_bytes, policy=policy)
        model: deque[str] = deque()
        for step in range(120):
            action = rng.random()
            if action < 0.5:
                batch = [f"r{trial}.{step}.{i}" + "x" * rng.randint(0, 15) for i in range(12)]
                batch = batch[: rng.randint(1, 12)]
                dropped = 0
                if policy == "drop_newest":
                    kept: list[str] = []
                    for record in batch:
                        if over([*model, *kept, record], max_points, max_bytes):
                            break
                        kept.append(record)
                    dropped = len(batch) - len(kept)
                    model.extend(kept)
                else:
                    model.extend(batch)
                    while over(list(model), max_points, max_bytes):
                        model.popleft()
                        dropped += 1
                assert sum(spool.append(batch).dropped.values()) == dropped
            elif action < 0.8:
                rows = spool.peek(rng.randint(1, 10))
                assert [r for _, r in rows] == list(model)[: len(rows)]
                if rng.random() < 0.8:
                    spool.ack(rows)
                    for _ in rows:
                        model.popleft()
            else:
                spool.close()
                spool = Spool(path, max_points=max_points, max_bytes=max_bytes, policy=policy)
            assert (spool.depth_points, spool.depth_bytes) == (len(model), sum(map(len, model)))
            assert bodies(spool) == list(model)
        spool.close()
