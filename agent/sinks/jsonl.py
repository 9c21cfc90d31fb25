"""A local JSON-lines file: one :meth:`TelemetrySample.to_json` object per line, appended."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from eams.agent.config import JsonlSinkConfig
from eams.agent.errors import SinkError
from eams.telemetry import TelemetrySample


class JsonlSink:
    """Append samples to a file; a batch is on disk (fsync) before :meth:`write` returns."""

    def __init__(self, name: str, config: JsonlSinkConfig):
        self.name = name
        self._path = config.path

    def encode(self, sample: TelemetrySample) -> str:
        """The sample as a compact JSON object (one line)."""
        return json.dumps(sample.to_json(), separators=(",", ":"))

    def write(self, batch: Sequence[str]) -> None:
        """Append the lines, all or none: on a failure (a full disk) the file is cut back to
        its previous length, so a retry cannot leave a torn or doubled line.

        Raises
        ------
        SinkError
            Retryable, naming the path and the OS error (ENOSPC, EACCES...).
        """
        data = ("\n".join(batch) + "\n").encode()
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SinkError(f"{self.name}: {self._path}: {exc.strerror}", retryable=True) from exc
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except OSError as exc:
                os.ftruncate(fd, start)
                raise SinkError(
                    f"{self.name}: {self._path}: {exc.strerror}", retryable=True
                ) from exc
        finally:
            os.close(fd)

    def close(self) -> None:
        """Nothing to release: the file is opened per batch."""
