"""The record's files in its folder: names, order, rotation and the bound on disk.

A writer with prefix ``decisions`` appends to ``decisions.jsonl``; rotation renames it to
``decisions-20250102T030405.678901Z.jsonl`` (UTC time of the rotation, so every line in it is
older), and a new ``decisions.jsonl`` begins. Names sort in time order; the active file comes
last. Rename within one folder is atomic (POSIX ``rename(2)``), so a reader sees each line in
exactly one file. Several writers may share a folder under different prefixes (the extender's
``decisions``, the power manager's ``power``); each bounds only its own files.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

SUFFIX = ".jsonl"
_ROTATED = re.compile(r"^(?P<prefix>[A-Za-z0-9_.]+)-(?P<stamp>\d{8}T\d{6}\.\d{6}Z)\.jsonl$")
_PREFIX = re.compile(r"^[A-Za-z0-9_.]+$")


def check_prefix(prefix: str) -> str:
    """``prefix`` if it is a plain file-name stem (letters, digits, ``_``, ``.``).

    Raises
    ------
    ValueError
        Anything else (a ``-`` would make rotated names ambiguous; a ``/`` leaves the folder).
    """
    if not _PREFIX.match(prefix):
        raise ValueError(f"prefix {prefix!r}: use letters, digits, '_' or '.' only")
    return prefix


def active_path(folder: Path, prefix: str) -> Path:
    """The file a writer appends to."""
    return folder / f"{prefix}{SUFFIX}"


def rotated_name(prefix: str, at_s: float) -> str:
    """The name of a file rotated at epoch second ``at_s`` (UTC, microseconds)."""
    whole = int(at_s)
    micro = round((at_s - whole) * 1e6)
    if micro == 1_000_000:
        whole, micro = whole + 1, 0
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(whole))
    return f"{prefix}-{stamp}.{micro:06d}Z{SUFFIX}"


def rotated(folder: Path, prefix: str) -> list[Path]:
    """``prefix``'s rotated files in ``folder``, oldest first."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            match = _ROTATED.match(entry.name)
            if match and match["prefix"] == prefix:
                found.append(Path(entry.path))
    return sorted(found, key=lambda p: p.name)


def record_files(path: Path) -> list[Path]:
    """Every record file a reader should read, in time order within each prefix.

    ``path`` may be one file (itself), or a folder: each prefix's rotated files oldest first,
    then its active file; prefixes in name order.
    """
    if not path.is_dir():
        return [path]
    prefixes = set()
    for entry in path.iterdir():
        match = _ROTATED.match(entry.name)
        if match:
            prefixes.add(match["prefix"])
        elif entry.suffix == SUFFIX and _PREFIX.match(entry.stem):
            prefixes.add(entry.stem)
    files: list[Path] = []
    for prefix in sorted(prefixes):
        files += rotated(path, prefix)
        active = active_path(path, prefix)
        if active.exists():
            files.append(active)
    return files


def unique_rotated_path(folder: Path, prefix: str, at_s: float) -> Path:
    """A rotated name at ``at_s`` not yet taken (one µs later per clash)."""
    while True:
        target = folder / rotated_name(prefix, at_s)
        if not target.exists():
            return target
        at_s += 1e-6


def enforce_bound(folder: Path, prefix: str, active_bytes: int, max_total_bytes: int) -> int:
    """Delete ``prefix``'s oldest rotated files until they and the active file fit in
    ``max_total_bytes``; returns how many were deleted (a file gone already counts not)."""
    files = rotated(folder, prefix)
    sizes = []
    for f in files:
        try:
            sizes.append(f.stat().st_size)
        except FileNotFoundError:
            sizes.append(0)
    total = active_bytes + sum(sizes)
    deleted = 0
    for f, size in zip(files, sizes, strict=True):
        if total <= max_total_bytes:
            break
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
            deleted += 1
        total -= size
    return deleted
