"""``OUT/cells.jsonl``: every finished cell of a sweep, written as it finishes, so a stopped
sweep keeps what it did and a rerun into the same folder runs only the cells still missing.

One JSON line per cell: ``{"manifest_sha256", "figures", "latency"}``. The digest is that of
the manifest's experiment (:func:`manifest_digest`: everything but ``workers``, which changes
how fast the cells run, never what they give), so a rerun with another number of workers or on
another cluster resumes, and a file from another manifest is refused rather than mixed in. A
line cut short by the stop (no final newline) is dropped and rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from eams.scheduler.bench.errors import SweepError
from eams.scheduler.bench.manifest import Manifest

FILE_NAME = "cells.jsonl"

CellKey = tuple[str, str, float, int]
"""(scheduler, power-manager mode, ρ, seed): what names a cell in the file."""


def manifest_digest(manifest: Manifest) -> str:
    """SHA-256 (hex) of the manifest's experiment: its JSON without ``workers``."""
    text = manifest.model_dump_json(exclude={"workers"})
    return hashlib.sha256(text.encode()).hexdigest()


def cell_key(figures: dict) -> CellKey:
    """The key of the cell whose figures these are."""
    return (figures["scheduler"], figures["power_manager"], figures["rho"], figures["seed"])


class CellLog:
    """The finished cells of one manifest's sweep in ``folder/cells.jsonl``.

    Parameters
    ----------
    folder : Path, the sweep's output folder (created)
    manifest : Manifest
    """

    def __init__(self, folder: Path, manifest: Manifest) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / FILE_NAME
        self.digest = manifest_digest(manifest)

    def load(self) -> dict[CellKey, tuple[dict, dict]]:
        """The cells already in the file: key → (figures, latency); ``{}`` without a file.

        A last line without its newline (the sweep was stopped while writing it) is cut off
        the file.

        Raises
        ------
        SweepError
            If a line is not JSON or was written for another manifest (the file and line are
            named).
        """
        if not self.path.exists():
            return {}
        text = self.path.read_text()
        whole = text[: text.rfind("\n") + 1]
        if whole != text:
            self.path.write_text(whole)
        done: dict[CellKey, tuple[dict, dict]] = {}
        for number, line in enumerate(whole.splitlines(), start=1):
            try:
                row = json.loads(line)
                digest, figures, latency = row["manifest_sha256"], row["figures"], row["latency"]
            except (ValueError, KeyError, TypeError) as exc:
                raise SweepError(f"{self.path}:{number}: not a cell line ({exc})") from exc
            if digest != self.digest:
                raise SweepError(
                    f"{self.path}:{number}: a cell of another manifest; remove the file or "
                    "choose another output folder"
                )
            done[cell_key(figures)] = (figures, latency)
        return done

    def append(self, figures: dict, latency: dict) -> None:
        """Write one finished cell and push it to the disk before returning."""
        row = {"manifest_sha256": self.digest, "figures": figures, "latency": latency}
        with self.path.open("a") as handle:
            handle.write(json.dumps(row, default=str) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
