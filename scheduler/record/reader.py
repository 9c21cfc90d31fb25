"""Reading the record back: a file or a folder (rotated files included), filtered by pod or node.

A line that cannot contain the pod or node asked about (its JSON-quoted name is not in the raw
bytes) is skipped before it is decoded, so a query over a large folder costs a byte search per
line. Lines that do not decode (a line cut short by a crash, a record of a newer version) are
skipped and counted, the first few named by file and line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from eams.scheduler.record import files
from eams.scheduler.record.errors import RecordReadError
from eams.scheduler.record.schema import (
    SCHEMA_VERSION,
    Bound,
    Ended,
    Energy,
    Placement,
    Power,
    Record,
    Wake,
    decode,
)

_NAMED_SKIPS = 3


@dataclass(frozen=True)
class Query:
    """Which records to keep: about a pod, about a node, or (neither) all.

    Attributes
    ----------
    pod : str or None
        ``namespace/name``, a bare name (any namespace) or a ``metadata.uid``.
    node : str or None
        A node name: its placements (cleared there, a candidate or gated), its power decisions,
        the pods bound there and their ends and energy.
    """

    pod: str | None = None
    node: str | None = None

    def needles(self) -> tuple[bytes, ...]:
        """Bytes every matching line contains (JSON-quoted names)."""
        if self.pod is not None:
            return tuple(msgspec.json.encode(part) for part in self.pod.split("/", 1))
        if self.node is not None:
            return (msgspec.json.encode(self.node),)
        return ()

    def matches(self, record: Record) -> bool:
        """Whether ``record`` is about the pod or node asked for."""
        if self.pod is not None:
            pod = getattr(record, "pod", None)
            return pod is not None and self.pod in (pod.uid, pod.key, pod.name)
        if self.node is None:
            return True
        node = self.node
        if isinstance(record, Placement):
            return (
                record.cleared_node == node
                or any(c.node == node for c in record.candidates)
                or any(g.node == node for g in record.gated)
            )
        if isinstance(record, Power | Ended | Energy | Wake):
            return record.node == node
        if isinstance(record, Bound):
            return node in (record.bound_node, record.cleared_node)
        return False


@dataclass
class ReadResult:
    """What a read found.

    Attributes
    ----------
    records : list of Record
        Matching records, in file order (the newest ``limit`` when a limit was given).
    files : list of Path
        The files read, in order.
    lines : int
        Lines read.
    skipped : int
        Lines that did not decode or are of a newer version.
    skipped_examples : list of str
        The first few, as ``file:line: reason``.
    """

    records: list[Record] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    lines: int = 0
    skipped: int = 0
    skipped_examples: list[str] = field(default_factory=list)


def read_records(path: Path, query: Query | None = None, limit: int | None = None) -> ReadResult:
    """Read the record at ``path`` (a file, or a folder of record files).

    Parameters
    ----------
    path : Path
    query : Query, optional
        Keep only the records about a pod or node (all when not given).
    limit : int, optional
        Keep only the newest ``limit`` matching records.

    Raises
    ------
    RecordReadError
        ``path`` does not exist or a file cannot be read.
    """
    if not path.exists():
        raise RecordReadError(f"record {path}: no such file or folder")
    query = query or Query()
    needles = query.needles()
    result = ReadResult(files=files.record_files(path))
    kept: deque[Record] = deque(maxlen=limit)
    for file in result.files:
        for number, line in _lines(file):
            result.lines += 1
            if not line.strip() or not all(n in line for n in needles):
                continue
            try:
                record = decode(line)
            except msgspec.DecodeError as exc:
                _skip(result, file, number, str(exc))
                continue
            if record.version > SCHEMA_VERSION:
                _skip(result, file, number, f"version {record.version} is newer than this reader")
                continue
            if query.matches(record):
                kept.append(record)
    result.records = list(kept)
    return result


def _lines(file: Path) -> Iterator[tuple[int, bytes]]:
    try:
        with file.open("rb") as handle:
            yield from enumerate(handle, start=1)
    except FileNotFoundError:
        return  # rotated away and deleted between the listing and the read
    except OSError as exc:
        raise RecordReadError(f"record file {file}: {exc.strerror}") from exc


def _skip(result: ReadResult, file: Path, number: int, reason: str) -> None:
    result.skipped += 1
    if len(result.skipped_examples) < _NAMED_SKIPS:
        result.skipped_examples.append(f"{file}:{number}: {reason}")
