"""The writer: rotation by size and age, the bound on disk, a full queue, a second writer, and
a REAL full disk (a 256 KiB tmpfs mounted for the test) that never reaches the caller."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from eams.scheduler.record import PodRef, Recorder, RecordMetrics, WriterSettings
from eams.scheduler.record.errors import RecordConfigError
from eams.scheduler.record.files import record_files
from eams.scheduler.record.schema import Placement, decode, encode
from tests.record.conftest import window


def records(n: int, mode: str = "active") -> list[Placement]:
    """``n`` placement records from real clearings, 3 pods per window, distinct names."""
    out: list[Placement] = []
    while len(out) < n:
        for r in window(3, mode=mode):
            pod = PodRef(namespace="ns", name=f"job-{len(out)}", uid=f"u{len(out)}")
            out.append(msgspec.structs.replace(r, pod=pod))
    return out[:n]


def sample(metrics: RecordMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return value or 0.0


def lines_in(folder: Path) -> list[bytes]:
    """Every line of every record file, oldest first; each must be a whole record."""
    out = []
    for f in record_files(folder):
        data = f.read_bytes()
        assert not data or data.endswith(b"\n"), f"{f} ends inside a line"
        out += data.splitlines()
    return out


def test_everything_submitted_is_written_in_order(tmp_path: Path) -> None:
    metrics = RecordMetrics()
    batch = records(40)
    with Recorder(WriterSettings(folder=tmp_path), metrics) as recorder:
        assert recorder.submit_all(batch) == 40
        assert recorder.flush()
    assert [decode(line) for line in lines_in(tmp_path)] == batch
    assert sample(metrics, "eams_record_written_total", kind="placement") == 40
    assert sample(metrics, "eams_record_decisions_total", kind="placement", mode="active") == 40
    assert sample(metrics, "eams_record_written_bytes_total") == sum(
        len(encode(r)) + 1 for r in batch
    )


def test_rotation_by_size_keeps_files_under_the_limit_and_lines_whole(tmp_path: Path) -> None:
    metrics = RecordMetrics()
    limit = 8 * 1024
    batch = records(120)
    settings = WriterSettings(folder=tmp_path, max_file_bytes=limit, max_total_bytes=2**30)
    with Recorder(settings, metrics) as recorder:
        recorder.submit_all(batch[:60])
        recorder.flush()
        recorder.submit_all(batch[60:])
        recorder.flush()
    files = record_files(tmp_path)
    assert len(files) >= 120 * len(encode(batch[0])) // limit
    assert all(f.stat().st_size <= limit for f in files)
    assert files[-1].name == "decisions.jsonl"
    assert [decode(line) for line in lines_in(tmp_path)] == batch
    assert sample(metrics, "eams_record_rotations_total") == len(files) - 1


def test_rotation_by_age(tmp_path: Path) -> None:
    settings = WriterSettings(folder=tmp_path, max_file_age_s=0.2, flush_interval_s=0.05)
    with Recorder(settings) as recorder:
        recorder.submit(records(1)[0])
        recorder.flush()
        deadline = time.monotonic() + 30
        while len(record_files(tmp_path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the thread rotates the aged file on one of its wake-ups
        recorder.submit(records(2)[1])
        recorder.flush()
    files = record_files(tmp_path)
    assert [len(f.read_bytes().splitlines()) for f in files] == [1, 1]
    assert files[0].name.startswith("decisions-") and files[1].name == "decisions.jsonl"


def test_the_folder_stays_under_its_bound_oldest_deleted(tmp_path: Path) -> None:
    metrics = RecordMetrics()
    limit = 4096
    settings = WriterSettings(folder=tmp_path, max_file_bytes=limit, max_total_bytes=3 * limit)
    batch = records(200)
    with Recorder(settings, metrics) as recorder:
        for start in range(0, 200, 20):
            recorder.submit_all(batch[start : start + 20])
            recorder.flush()
            total = sum(f.stat().st_size for f in record_files(tmp_path))
            assert total <= 3 * limit
    kept = [decode(line) for line in lines_in(tmp_path)]
    assert kept == batch[-len(kept) :]  # the newest survive, in order
    assert len(kept) < 200
    assert sample(metrics, "eams_record_deleted_files_total") > 0


def test_a_leftover_file_is_rotated_and_a_second_writer_refused(tmp_path: Path) -> None:
    (tmp_path / "decisions.jsonl").write_bytes(encode(records(1)[0]) + b"\n")
    with Recorder(WriterSettings(folder=tmp_path)) as recorder:
        assert [f.name.startswith("decisions-") for f in record_files(tmp_path)] == [True, False]
        with pytest.raises(RecordConfigError, match="written by another process"):
            Recorder(WriterSettings(folder=tmp_path))
        Recorder(WriterSettings(folder=tmp_path, prefix="power")).close()  # its own prefix
        assert recorder.path.name == "decisions.jsonl"


def test_bad_settings_are_named_together(tmp_path: Path) -> None:
    with pytest.raises(RecordConfigError) as caught:
        WriterSettings(
            folder=tmp_path, prefix="a-b", max_file_bytes=10, max_queue_records=0
        ).validate()
    for name in ("prefix", "max_file_bytes", "max_queue_records"):
        assert name in str(caught.value)


def test_a_full_queue_drops_and_counts_never_blocks(tmp_path: Path) -> None:
    """With the GIL's switch interval raised, the writer thread can barely run during the
    burst: the first ``max_queue_records`` are queued, then submits return False at once. The
    writer may still drain a few when the burst's own logging of a drop lets it run (CI, 2
    Dec, at load: an 11th was queued), so each submit is checked against its count."""
    metrics = RecordMetrics()
    batch = records(300)
    settings = WriterSettings(folder=tmp_path, max_queue_records=10, flush_interval_s=30)
    with Recorder(settings, metrics) as recorder:
        before = sys.getswitchinterval()
        sys.setswitchinterval(5.0)
        try:
            accepted = [recorder.submit(r) for r in batch]
        finally:
            sys.setswitchinterval(before)
        recorder.flush()
    kept, dropped = accepted.count(True), accepted.count(False)
    assert accepted[:10] == [True] * 10 and accepted[10] is False and dropped >= 200
    assert sample(metrics, "eams_record_dropped_total", reason="queue_full") == dropped
    assert sample(metrics, "eams_record_written_total", kind="placement") == kept
    # dropped decisions still count as decisions made
    assert sample(metrics, "eams_record_decisions_total", kind="placement", mode="active") == 300


def test_submit_after_close_is_dropped_and_counted(tmp_path: Path) -> None:
    metrics = RecordMetrics()
    recorder = Recorder(WriterSettings(folder=tmp_path), metrics)
    recorder.close()
    assert recorder.submit(records(1)[0]) is False
    assert sample(metrics, "eams_record_dropped_total", reason="closed") == 1


# ---- a real full disk -------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, unmounted afterwards."""
    where = tmp_path / "tmpfs"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"FULL-DISK TEST NOT RUN: mount refused ({done.stderr.strip()}); needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_drops_counts_keeps_lines_whole_and_recovers(small_disk: Path) -> None:
    metrics = RecordMetrics()
    folder = small_disk / "record"
    settings = WriterSettings(
        folder=folder, max_file_bytes=64 * 1024, max_total_bytes=2**30, flush_interval_s=0.05
    )
    batch = records(600)  # ~1,000 bytes each: more than twice the disk
    with Recorder(settings, metrics) as recorder:
        accepted = [recorder.submit(r) for r in batch]  # never raises
        assert all(accepted)
        assert recorder.flush()
        written = sample(metrics, "eams_record_written_total", kind="placement")
        dropped = sample(metrics, "eams_record_dropped_total", reason="disk_full")
        assert dropped > 0 and written > 0
        assert written + dropped == 600
        on_disk = [decode(line) for line in lines_in(folder)]
        assert len(on_disk) == written
        assert on_disk == batch[: len(on_disk)]  # no line half-written, none out of order
        # space comes back: the writer goes on without being restarted
        for f in record_files(folder)[:-1]:
            f.unlink()
        later = records(3)
        assert recorder.submit_all(later) == 3
        assert recorder.flush()
    assert [decode(line) for line in lines_in(folder)][-3:] == later


def test_another_write_error_is_counted_not_raised(tmp_path: Path) -> None:
    """The kernel's file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes write(2) fail with
    EFBIG: a ``write_error``, the lines before it kept whole."""
    metrics = RecordMetrics()
    first, second = records(2)
    settings = WriterSettings(folder=tmp_path, flush_interval_s=0.05)
    with Recorder(settings, metrics) as recorder:
        recorder.submit(first)
        recorder.flush()
        size = recorder.path.stat().st_size
        old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, old_limit[1]))
        try:
            assert recorder.submit(second) is True
            assert recorder.flush()
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
            signal.signal(signal.SIGXFSZ, old_handler)
    assert sample(metrics, "eams_record_dropped_total", reason="write_error") == 1
    assert [decode(line) for line in lines_in(tmp_path)] == [first]
