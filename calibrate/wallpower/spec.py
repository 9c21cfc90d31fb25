"""Run SPECs: how an operator names one scheduler's run (a time window of telemetry).

Two forms, one per telemetry store (see ``calibrate/wallpower/README.md``)::

    jsonl:PATH[,PATH...][?start=T&end=T&work_core_s=W&label=NAME]
    influx://HOST[:PORT]/DATABASE?start=T&end=T[&work_core_s=W&label=NAME&measurement=M]

- ``PATH`` is a JSONL file written by the agent's JSONL sink, a directory (every ``*.jsonl`` in
  it) or a glob pattern (``runs/a/*.jsonl``).
- ``T`` is ISO-8601 (``2026-11-29T10:00:00Z``; no offset means UTC) or epoch seconds
  (``1796032800.5``). The window is closed, ``[start, end]``. For JSONL both are optional (the
  default is the span of the data); InfluxDB needs both.
- ``work_core_s`` is the work the run completed in reference core-seconds (the scheduler's
  ``work_core_s`` unit). Given for both runs, energies are compared per unit of work.
- ``influx://`` speaks the InfluxDB 1.x query API (``/query``, InfluxQL) over HTTP, port 8086 by
  default; ``EAMS_INFLUX_USER``/``EAMS_INFLUX_PASSWORD`` supply credentials when set, so the SPEC
  itself holds no secret.
"""

from __future__ import annotations

import glob
import math
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict
from urllib.parse import parse_qs, urlsplit

from eams.calibrate.wallpower.errors import RunSpecError
from eams.telemetry import MEASUREMENT

FORMS = (
    "jsonl:PATH[,PATH...][?start=T&end=T&work_core_s=W&label=NAME] or "
    "influx://HOST[:PORT]/DATABASE?start=T&end=T[&work_core_s=W&label=NAME&measurement=M]"
)
INFLUX_DEFAULT_PORT = 8086
INFLUX_USER_ENV = "EAMS_INFLUX_USER"
INFLUX_PASSWORD_ENV = "EAMS_INFLUX_PASSWORD"
_COMMON_OPTIONS = {"start", "end", "work_core_s", "label"}


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run: where its telemetry is and which window and work belong to it.

    Attributes
    ----------
    text : str
        The SPEC as given (for messages).
    kind : {"jsonl", "influx"}
    paths : tuple of Path
        JSONL files (``kind == "jsonl"``), expanded from files, directories and globs.
    influx_url : str or None
        ``http://HOST:PORT`` of the InfluxDB server (``kind == "influx"``).
    database, measurement : str or None
        InfluxDB database and measurement (``eams_node`` by default).
    start_ns, end_ns : int or None
        The window, epoch nanoseconds UTC; ``None`` = the span of the data (JSONL only).
    work_core_s : float or None
        Work completed in the run (reference core-seconds), > 0.
    label : str or None
        Name shown in the report (default ``A``/``B``).
    auth : tuple of str or None
        (user, password) from the environment, for InfluxDB.
    """

    text: str
    kind: str
    paths: tuple[Path, ...] = ()
    influx_url: str | None = None
    database: str | None = None
    measurement: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    work_core_s: float | None = None
    label: str | None = None
    auth: tuple[str, str] | None = field(default=None, repr=False)


def parse_time_ns(text: str, where: str) -> int:
    """Parse an ISO-8601 time (no offset = UTC) or epoch seconds into epoch nanoseconds.

    Raises
    ------
    RunSpecError
        Naming ``where`` and the text that is not a time.
    """
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise RunSpecError(
                f"{where}: {text!r} is neither ISO-8601 (2026-11-29T10:00:00Z) nor epoch seconds"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        seconds = moment.timestamp()
    if not math.isfinite(seconds):
        raise RunSpecError(f"{where}: {text!r} is not a finite time")
    return round(seconds * 1e9)


def format_time_ns(epoch_ns: int, timespec: str = "seconds") -> str:
    """Epoch nanoseconds as UTC ISO-8601 with ``Z`` (``2026-12-02T03:00:04Z``), the form
    :func:`parse_time_ns` reads back; ``timespec`` as :meth:`datetime.isoformat`'s."""
    moment = datetime.fromtimestamp(epoch_ns / 1e9, UTC)
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")


def _options(query: str, allowed: set[str], spec: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for key, values in parse_qs(query, keep_blank_values=True).items():
        if key not in allowed:
            raise RunSpecError(
                f"run {spec!r}: unknown option {key!r}; allowed: {', '.join(sorted(allowed))}"
            )
        if len(values) != 1 or not values[0]:
            raise RunSpecError(f"run {spec!r}: option {key!r} needs exactly one value")
        options[key] = values[0]
    return options


def _expand_paths(listing: str, spec: str) -> tuple[Path, ...]:
    paths: list[Path] = []
    for item in filter(None, listing.split(",")):
        path = Path(item).expanduser()
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
        elif glob.has_magic(item):
            found = sorted(Path(p) for p in glob.glob(os.path.expanduser(item)))
        else:
            found = [path] if path.is_file() else []
        if not found:
            raise RunSpecError(f"run {spec!r}: no JSONL file at {item!r}")
        paths.extend(found)
    if not paths:
        raise RunSpecError(f"run {spec!r}: no path; expected {FORMS}")
    return tuple(dict.fromkeys(paths))


class _Common(TypedDict):
    """The options every form shares, as :class:`RunSpec` keyword arguments."""

    start_ns: int | None
    end_ns: int | None
    work_core_s: float | None
    label: str | None


def _common(options: dict[str, str], spec: str) -> _Common:
    # a literal "+" of a UTC offset arrives as a space from the query string
    start, end = (
        parse_time_ns(options[k].replace(" ", "+"), f"run {spec!r} {k}") if k in options else None
        for k in ("start", "end")
    )
    if start is not None and end is not None and end <= start:
        raise RunSpecError(f"run {spec!r}: end is not after start")
    work = None
    if "work_core_s" in options:
        try:
            work = float(options["work_core_s"])
        except ValueError:
            work = math.nan
        if not (math.isfinite(work) and work > 0):
            raise RunSpecError(f"run {spec!r}: work_core_s must be a number > 0")
    return {"start_ns": start, "end_ns": end, "work_core_s": work, "label": options.get("label")}


def parse_run_spec(text: str) -> RunSpec:
    """Parse and check a run SPEC (forms in this module's docstring).

    Parameters
    ----------
    text : str
        The SPEC.

    Returns
    -------
    RunSpec

    Raises
    ------
    RunSpecError
        Unknown scheme or option, a JSONL path that matches no file, a bad time or work, an
        InfluxDB SPEC without database, start or end.
    """
    text = text.strip()
    if text.startswith("jsonl:"):
        listing, _, query = text[len("jsonl:") :].partition("?")
        options = _options(query, _COMMON_OPTIONS, text)
        return RunSpec(text, "jsonl", paths=_expand_paths(listing, text), **_common(options, text))
    if text.startswith("influx://"):
        try:
            parts = urlsplit(text)
        except ValueError as exc:  # e.g. an unclosed IPv6 bracket
            raise RunSpecError(f"run {text!r}: not a URL ({exc}); expected {FORMS}") from None
        options = _options(parts.query, _COMMON_OPTIONS | {"measurement"}, text)
        database = parts.path.strip("/")
        if not parts.hostname or not database:
            raise RunSpecError(f"run {text!r}: needs a host and a database; expected {FORMS}")
        try:
            port = parts.port or INFLUX_DEFAULT_PORT
        except ValueError:
            raise RunSpecError(f"run {text!r}: the port is not a number in 1-65535") from None
        common = _common(options, text)
        if common["start_ns"] is None or common["end_ns"] is None:
            raise RunSpecError(f"run {text!r}: an InfluxDB run needs start=T and end=T")
        user = os.environ.get(INFLUX_USER_ENV)
        auth = (user, os.environ.get(INFLUX_PASSWORD_ENV, "")) if user else None
        return RunSpec(
            text,
            "influx",
            influx_url=f"http://{parts.hostname}:{port}",
            database=database,
            measurement=options.get("measurement", MEASUREMENT),
            auth=auth,
            **common,
        )
    raise RunSpecError(f"run {text!r}: unknown form; expected {FORMS}")
