"""Watts Up? PRO plug-in power meter: its serial ``#d`` data records.

Protocol facts, from ``../shared/data/power_meters/wattsup_pro_protocol_strings.txt`` (verbatim
strings of abhishekbala/WattsUpData ``wattsUpCollect.m``) and the real captures beside it
(kjordahl/Watts-Up--logger ``samples/*.raw``):

- A record is ``#d,-,18,<18 comma-separated integers>;`` (then CR LF); ``18`` is the field
  count. Field order is the header the meter returns for ``#H,R,0;``:
  ``W,V,A,WH,Cost,WH/Mo,Cost/Mo,Wmax,Vmax,Amax,Wmin,Vmin,Amin,PF,DC,PC,Hz,VA``.
- Scaling (same file): W/10, V/10, A/1000, PF/100, Hz/10. WH is in tenths of Wh: over the fan
  capture WH rises by 203 while the mean power of 42.2 W for 1,733 s gives 20.3 Wh.
- ``#L,W,3,E,0,1;`` starts external logging: one record per second on the serial line.
- The captures hold stray NUL bytes between records and records glued without CR LF, so the
  parser cuts the byte stream at ``#`` … ``;``, not at line ends. There is no checksum.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import serial

from eams.meter.errors import MeterProtocolError, MeterTimeout, MeterUnreachable
from eams.meter.reading import OutletReading, Reading
from eams.meter.url import MeterUrl

FIELDS = (
    "W", "V", "A", "WH", "Cost", "WH/Mo", "Cost/Mo", "Wmax", "Vmax", "Amax",
    "Wmin", "Vmin", "Amin", "PF", "DC", "PC", "Hz", "VA",
)  # fmt: skip
"""Field names of a ``#d`` record, in order (the ``#h`` header line)."""
SCALE = {"W": 0.1, "V": 0.1, "A": 0.001, "WH": 0.1, "PF": 0.01, "Hz": 0.1}
"""Multiply a raw field by this to get W, V, A, Wh, (fraction), Hz."""
START_LOGGING = b"#L,W,3,E,0,1;"
ACCURACY_PCT = 1.5
"""Watts Up? PRO stated accuracy (±1.5 %, manufacturer's specification)."""
DEADLINE_SLACK_S = 0.5
_READ_CHUNK_BYTES = 4096


@dataclass(frozen=True, slots=True)
class WattsUpRecord:
    """One decoded ``#d`` record in SI units; a field the meter left out or garbled is None."""

    power_w: float | None
    voltage_v: float | None
    current_a: float | None
    energy_wh: float | None
    power_factor: float | None
    frequency_hz: float | None
    problems: tuple[str, ...] = ()


def split_records(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Cut a byte stream into records ``#…;``.

    Parameters
    ----------
    buffer : bytes
        Bytes received so far.

    Returns
    -------
    records : list of bytes
        Complete records in arrival order, each from ``#`` up to and including ``;``. A record
        interrupted by the next ``#`` is returned as it is (without ``;``) so the decoder
        reports it truncated.
    rest : bytes
        The incomplete tail (from its ``#``), to prepend to the next bytes.
    """
    records: list[bytes] = []
    start = buffer.find(b"#")
    while start != -1:
        end = buffer.find(b";", start)
        following = buffer.find(b"#", start + 1)
        if end == -1 and following == -1:
            return records, buffer[start:]
        if following != -1 and (end == -1 or following < end):
            records.append(buffer[start:following])
            start = following
        else:
            records.append(buffer[start : end + 1])
            start = buffer.find(b"#", end + 1)
    return records, b""


def _scaled(raw: str, field: str) -> float | None:
    try:
        value = int(raw)
    except ValueError:
        return None
    return round(value * SCALE.get(field, 1.0), 6)  # 350 × 0.001 is 0.35, not 0.35000000000000003


def decode_record(record: bytes, where: str) -> WattsUpRecord:
    """Decode one ``#d,-,N,…;`` record.

    Raises
    ------
    MeterProtocolError
        If it is not a data record, lacks its ``;`` (interrupted), or has fewer or more fields
        than it declares; the message names ``where`` and the record.
    """
    text = record.decode("ascii", errors="replace").strip("\x00\r\n ")
    if not text.startswith("#d,"):
        raise MeterProtocolError(f"{where}: not a data record: {text[:40]!r}")
    if not text.endswith(";"):
        raise MeterProtocolError(f"{where}: truncated frame (no ';'): {text[:80]!r}")
    parts = text[:-1].split(",")
    try:
        declared = int(parts[2])
    except (IndexError, ValueError):
        raise MeterProtocolError(f"{where}: no field count in {text[:40]!r}") from None
    values = parts[3:]
    if len(values) != declared or declared != len(FIELDS):
        raise MeterProtocolError(
            f"{where}: truncated frame, {len(values)} fields where {declared} are declared "
            f"and {len(FIELDS)} expected: {text[:80]!r}"
        )
    by_name = dict(zip(FIELDS, values, strict=True))
    used = ("W", "V", "A", "WH", "PF", "Hz")
    problems = tuple(
        f"{where}: field {f} = {by_name[f]!r} is not a number"
        for f in used
        if _scaled(by_name[f], f) is None
    )
    return WattsUpRecord(
        power_w=_scaled(by_name["W"], "W"),
        voltage_v=_scaled(by_name["V"], "V"),
        current_a=_scaled(by_name["A"], "A"),
        energy_wh=_scaled(by_name["WH"], "WH"),
        power_factor=_scaled(by_name["PF"], "PF"),
        frequency_hz=_scaled(by_name["Hz"], "Hz"),
        problems=problems,
    )


class WattsUpMeter:
    """An open Watts Up? PRO on a serial line, logging one record per second.

    :meth:`read` returns the newest complete record received (waiting for one if none is
    buffered), bounded by timeout × (retries + 1) + slack.

    Raises
    ------
    MeterUnreachable
        If the serial device cannot be opened or written.
    """

    def __init__(self, url: MeterUrl, *, timeout_s: float = 1.0, retries: int = 1) -> None:
        self.url = url
        self.deadline_s = timeout_s * (retries + 1) + DEADLINE_SLACK_S
        self._rest = b""
        self.last_problems: list[str] = []
        """Fields of the last record that did not decode (their values are ``None``)."""
        self._lock = threading.Lock()
        try:
            self._port = serial.serial_for_url(
                url.host, baudrate=int(url.options["baudrate"]), timeout=timeout_s,
                write_timeout=timeout_s,
            )  # fmt: skip
            self._port.write(START_LOGGING)
        except (serial.SerialException, OSError) as exc:
            raise MeterUnreachable(f"{url.redacted()}: cannot use {url.host}: {exc}") from exc

    def _newest_record(self) -> WattsUpRecord:
        where = f"{self.url.host} (Watts Up? PRO)"
        deadline = time.monotonic() + self.deadline_s
        newest: bytes | None = None
        with self._lock:
            while True:
                remaining_s = deadline - time.monotonic()
                waiting = self._port.in_waiting
                if newest is not None and not waiting:
                    break
                if remaining_s <= 0:
                    raise MeterTimeout(f"{where}: no complete record within {self.deadline_s} s")
                self._port.timeout = min(remaining_s, 0.2)
                chunk = self._port.read(max(1, min(waiting, _READ_CHUNK_BYTES)))
                records, self._rest = split_records(self._rest + chunk)
                data = [r for r in records if r.startswith(b"#d")]
                if data:
                    newest = data[-1]
        return decode_record(newest, where)

    async def read(self) -> Reading:
        """Read the newest record as one outlet (outlet 1) and the device total.

        Raises
        ------
        MeterTimeout
            No complete record within the deadline.
        MeterProtocolError
            The newest record is truncated or malformed.
        MeterUnreachable
            The serial device failed.
        """
        try:
            # the reader thread stops at deadline_s with the better message; this is the backstop
            record = await asyncio.wait_for(
                asyncio.to_thread(self._read_record), self.deadline_s + DEADLINE_SLACK_S
            )
        except TimeoutError:
            raise MeterTimeout(f"{self.url.host}: no record within {self.deadline_s} s") from None
        self.last_problems = list(record.problems)
        return Reading(
            meter=self.url.redacted(),
            read_at=datetime.now(UTC),
            driver="wattsup",
            outlets=(
                OutletReading(
                    outlet=1,
                    power_w=record.power_w,
                    current_a=record.current_a,
                    voltage_v=record.voltage_v,
                    energy_wh=record.energy_wh,
                ),
            ),
            total_power_w=record.power_w,
            total_energy_wh=record.energy_wh,
            accuracy_pct=ACCURACY_PCT,
        )

    def _read_record(self) -> WattsUpRecord:
        try:
            return self._newest_record()
        except (serial.SerialException, OSError) as exc:
            raise MeterUnreachable(f"{self.url.host}: serial device failed: {exc}") from exc

    async def close(self) -> None:
        """Close the serial device. Idempotent."""
        self._port.close()
