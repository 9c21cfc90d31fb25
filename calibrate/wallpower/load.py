"""Load a run: telemetry records (JSONL or InfluxDB) → :class:`TelemetrySample` → per-node arrays.

Both stores go through one parser, :meth:`eams.telemetry.TelemetrySample.from_json`, which
holds every rule of the record (the extender ingests with the same one). Only
samples whose ``source`` is ``metered`` count as wall power; a ``modelled`` sample's power is the
agent's own estimate and is treated as *missing* metered power (its utilisation still counts).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from eams.calibrate.wallpower.errors import RunDataError
from eams.calibrate.wallpower.influx import read_influx
from eams.calibrate.wallpower.spec import RunSpec, format_time_ns
from eams.errors import TelemetryError
from eams.telemetry import PowerSource, TelemetrySample


@dataclass(frozen=True, slots=True)
class NodeSeries:
    """One node's telemetry in a run, sorted by time, one entry per distinct timestamp.

    Attributes
    ----------
    node : str
    t_s : ndarray, shape (K,), float
        Measurement times, seconds since the run's start.
    power_w : ndarray, shape (K,), float
        Metered power (W); NaN where the sample was not metered (missing or modelled).
    utilisation : ndarray, shape (K,), float
        CPU utilisation 0–1; NaN where missing.
    energy_wh : ndarray, shape (K,), float
        The outlet's cumulative energy counter (Wh); NaN where not offered.
    modelled_samples : int
        How many samples carried the agent's modelled power instead of a metered one.
    """

    node: str
    t_s: np.ndarray
    power_w: np.ndarray
    utilisation: np.ndarray
    energy_wh: np.ndarray
    modelled_samples: int = 0


@dataclass(frozen=True, slots=True)
class Run:
    """One scheduler's run: its window, per-node series and the work it completed.

    Attributes
    ----------
    label : str
    spec : RunSpec
    start_ns, end_ns : int
        The window, epoch ns (UTC).
    nodes : dict of str to NodeSeries
        In node-name order.
    work_core_s : float or None
        Reference core-seconds completed; ``None`` when the SPEC does not say.
    """

    label: str
    spec: RunSpec
    start_ns: int
    end_ns: int
    nodes: dict[str, NodeSeries]
    work_core_s: float | None

    @property
    def duration_s(self) -> float:
        """Length of the window (s)."""
        return (self.end_ns - self.start_ns) / 1e9


def read_jsonl(spec: RunSpec) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(file:line, record)`` for every non-blank line of the SPEC's JSONL files.

    Raises
    ------
    RunDataError
        A file cannot be read, or a line is not a JSON object (naming file and line).
    """
    for path in spec.paths:
        try:
            with path.open() as handle:
                for number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    where = f"{path}:{number}"
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise RunDataError(f"{where}: not JSON ({exc.msg})") from None
                    if not isinstance(record, dict):
                        raise RunDataError(f"{where}: not a JSON object")
                    yield where, record
        except OSError as exc:
            raise RunDataError(f"{path}: {exc.strerror or exc}") from exc


def parse_store_records(records: Iterable[tuple[str, dict[str, Any]]]) -> list[TelemetrySample]:
    """Turn a store's records (JSONL lines or InfluxDB rows) into samples, naming any bad one.

    Parameters
    ----------
    records : iterable of (str, dict)
        ``(where, record)`` pairs from :func:`read_jsonl` or
        :func:`~eams.calibrate.wallpower.influx.read_influx`.

    Raises
    ------
    RunDataError
        A record breaks the telemetry contract (:mod:`eams.telemetry`: a missing key, a wrong
        type, utilisation outside [0, 1], negative power...): the message starts with where it
        came from (``file:line``, or the query and series).
    """
    samples = []
    for where, record in records:
        try:
            samples.append(TelemetrySample.from_json(record))
        except TelemetryError as exc:
            raise RunDataError(f"{where}: {exc}") from None
    return samples


def _opt(value: float | None) -> float:
    return np.nan if value is None else value


def series_from_samples(samples: Iterable[TelemetrySample], start_ns: int) -> NodeSeries:
    """Build one node's arrays (duplicates at one timestamp: the metered one wins).

    Parameters
    ----------
    samples : iterable of TelemetrySample
        All of one node's samples in the window, any order.
    start_ns : int
        The run's start (epoch ns); ``t_s`` is relative to it.
    """
    by_time: dict[int, TelemetrySample] = {}
    for sample in samples:
        kept = by_time.get(sample.measured_at_ns)
        if kept is None or (
            kept.source is not PowerSource.METERED and sample.source is PowerSource.METERED
        ):
            by_time[sample.measured_at_ns] = sample
    ordered = [by_time[t] for t in sorted(by_time)]
    return NodeSeries(
        node=ordered[0].node,
        t_s=np.array([(s.measured_at_ns - start_ns) / 1e9 for s in ordered]),
        power_w=np.array(
            [_opt(s.power_w) if s.source is PowerSource.METERED else np.nan for s in ordered]
        ),
        utilisation=np.array([_opt(s.utilisation) for s in ordered]),
        energy_wh=np.array([_opt(s.energy_wh) for s in ordered]),
        modelled_samples=sum(s.source is PowerSource.MODELLED for s in ordered),
    )


def load_run(spec: RunSpec, default_label: str) -> Run:
    """Read a run's telemetry and cut it to its window.

    Parameters
    ----------
    spec : RunSpec
    default_label : str
        Used when the SPEC has no ``label`` (``"A"`` or ``"B"``).

    Returns
    -------
    Run

    Raises
    ------
    RunDataError
        No sample in the window (the message gives the span the source does hold), or a
        malformed record.
    InfluxUnreachable
        From :func:`~eams.calibrate.wallpower.influx.read_influx`.
    """
    label = spec.label or default_label
    records = read_jsonl(spec) if spec.kind == "jsonl" else read_influx(spec)
    samples = parse_store_records(records)
    lo = spec.start_ns if spec.start_ns is not None else -(2**63)
    hi = spec.end_ns if spec.end_ns is not None else 2**63
    inside = [s for s in samples if lo <= s.measured_at_ns <= hi]
    if not inside:
        held = (
            f"the source holds {format_time_ns(min(s.measured_at_ns for s in samples))} .. "
            f"{format_time_ns(max(s.measured_at_ns for s in samples))}"
            if samples
            else "the source holds no sample at all"
        )
        first = format_time_ns(lo) if spec.start_ns else "…"
        last = format_time_ns(hi) if spec.end_ns else "…"
        window = f"{first} .. {last}"
        raise RunDataError(f"run {label} ({spec.text}): no telemetry in {window}; {held}")
    start = spec.start_ns if spec.start_ns is not None else min(s.measured_at_ns for s in inside)
    end = spec.end_ns if spec.end_ns is not None else max(s.measured_at_ns for s in inside)
    if end <= start:
        raise RunDataError(f"run {label} ({spec.text}): the data spans no time (one instant)")
    per_node: dict[str, list[TelemetrySample]] = defaultdict(list)
    for sample in inside:
        per_node[sample.node].append(sample)
    nodes = {name: series_from_samples(per_node[name], start) for name in sorted(per_node)}
    return Run(label, spec, start, end, nodes, spec.work_core_s)
