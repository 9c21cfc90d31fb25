"""Calibrate one node end to end: open its runner and meter, sweep, fit, write the file.

Shared by ``eams calibrate sweep`` and ``eams calibrate fleet``. Whatever happens, measured
data is not lost: a sweep that stops early, or whose fit is refused, leaves its raw levels in
``NAME.partial.json`` beside the requested output.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from eams.calibrate.calfile import (
    Calibration,
    calibration_from_sweep,
    load_calibration,
    save_calibration,
    save_sweep_record,
)
from eams.calibrate.errors import CalibrationError, SweepError
from eams.calibrate.runners import LocalRunner, Runner, SshRunner
from eams.calibrate.runners.ssh import sweep_errors
from eams.calibrate.sweep import ProgressCallback, SweepPlan, run_sweep
from eams.calibrate.sweeprecord import SweepRecord
from eams.meter.blocking import BlockingMeter
from eams.ssh import SshClient, SshTarget


@dataclass(frozen=True, slots=True)
class SshOptions:
    """How to reach a node over SSH (see :class:`~eams.calibrate.runners.SshRunner`)."""

    identity: Path | None = None
    known_hosts: Path | None = None
    accept_unknown_host: bool = False


@dataclass(frozen=True, slots=True)
class SpeedReferenceSpec:
    """The speed reference: its name and bogo-ops/s at 100 % (``None``: the node itself)."""

    name: str = "self"
    bogo_ops_per_s: float | None = None

    @classmethod
    def from_file(cls, path: Path) -> SpeedReferenceSpec:
        """The reference node's own calibration file.

        Raises
        ------
        CalibrationFileError
            If the file is malformed; SweepError if it has no bogo-ops/s at full load.
        """
        cal = load_calibration(path)
        if cal.speed_reference is None:
            raise SweepError(f"{path}: node {cal.node} has no bogo-ops/s at 100 % to compare with")
        return cls(cal.node, cal.speed_reference.bogo_ops_per_s)


@contextmanager
def open_runner(ssh: str | None, options: SshOptions) -> Iterator[Runner]:
    """A :class:`LocalRunner` when ``ssh`` is ``None``, else an :class:`SshRunner` to
    ``USER@HOST[:PORT]``; closed on exit.

    Raises
    ------
    SweepError
        As :class:`~eams.calibrate.runners.SshRunner` (host key, authentication, connection).
    """
    runner: Runner
    if ssh is None:
        runner = LocalRunner()
    else:
        with sweep_errors():
            client = SshClient(
                SshTarget.parse(ssh),
                identity=options.identity,
                known_hosts=options.known_hosts,
                accept_unknown_host=options.accept_unknown_host,
            )
        runner = SshRunner(client)
    try:
        yield runner
    finally:
        runner.close()


def partial_path(out: Path) -> Path:
    """Where a sweep's raw data goes when no calibration can be written: ``NAME.partial.json``."""
    return out.with_name(f"{out.stem}.partial.json")


def sweep_node(
    node: str,
    *,
    meter_url: str,
    outlet: int,
    out: Path,
    ssh: str | None = None,
    ssh_options: SshOptions | None = None,
    plan: SweepPlan | None = None,
    driver: str | None = None,
    progress: ProgressCallback | None = None,
) -> SweepRecord:
    """Sweep one node (locally or over SSH) against its outlet.

    Returns
    -------
    SweepRecord

    Raises
    ------
    SweepError
        As :func:`~eams.calibrate.sweep.run_sweep`; when levels were measured they are saved to
        :func:`partial_path` first and the message names that file.
    MeterError
        If the meter URL is bad or names an unknown device (before any load is started).
    """
    with (
        open_runner(ssh, ssh_options or SshOptions()) as runner,
        BlockingMeter(meter_url, driver=driver) as meter,
    ):
        try:
            return run_sweep(
                runner,
                meter,
                node=node,
                meter_url=meter_url,
                outlet=outlet,
                plan=plan,
                progress=progress,
            )
        except SweepError as exc:
            if isinstance(exc.partial, SweepRecord) and exc.partial.levels:
                kept = save_sweep_record(exc.partial, partial_path(out))
                raise SweepError(f"{exc}; partial data in {kept}", exc.partial) from exc
            raise


def fit_and_save(
    record: SweepRecord, out: Path, reference: SpeedReferenceSpec | None = None
) -> Calibration:
    """Fit a sweep, write the calibration file to ``out`` and return it.

    Raises
    ------
    CalibrationError
        If the fit is refused (e.g. readings under the meter floor); the raw sweep is then
        saved to :func:`partial_path` and the message names it.
    """
    reference = reference or SpeedReferenceSpec()
    try:
        calibration = calibration_from_sweep(
            record,
            created_at=datetime.now(UTC),
            reference=reference.name,
            reference_bogo_ops_per_s=reference.bogo_ops_per_s,
        )
    except CalibrationError as exc:
        kept = save_sweep_record(record, partial_path(out))
        raise type(exc)(f"{exc}; raw sweep kept in {kept}") from exc
    save_calibration(calibration, out)
    return calibration
