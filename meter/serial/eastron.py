"""Eastron SDM120 / SDM630 Modbus-RTU energy meters, through pymodbus's serial client.

The register map is data (``registers.yaml`` beside this file). Reads are grouped into as few
0x04 requests as possible (:data:`MAX_BLOCK_REGISTERS` per request): one for an SDM120, two
for an SDM630.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, cast

import yaml
from pymodbus import ModbusException
from pymodbus.client import ModbusSerialClient
from pymodbus.exceptions import ConnectionException, ModbusIOException

from eams.meter.errors import MeterProtocolError, MeterTimeout, MeterUnreachable
from eams.meter.reading import OutletReading, Reading
from eams.meter.serial.modbus_errors import RxRecorder, explain_no_answer
from eams.meter.url import MeterUrl

REGISTERS_YAML = Path(__file__).with_name("registers.yaml")
INPUT_REGISTER_BASE = 30001
"""Register 3xxxx of a map is protocol address xxxx − 1 (Modbus data-model convention)."""
MAX_BLOCK_REGISTERS = 80
"""Largest span read in one request (40 floats; the protocol allows 125, MODBUS Application
Protocol V1.1b3 §6.4)."""
DEADLINE_SLACK_S = 0.5
QUANTITIES = ("voltage_v", "current_a", "power_w", "energy_wh")

# pymodbus logs connection and timeout failures at ERROR on a logger without handlers, so
# Python's last-resort handler printed them on stderr next to our one-line error. A
# NullHandler stops that; records still propagate to any handler the application configures.
logging.getLogger("pymodbus.logging").addHandler(logging.NullHandler())


@dataclass(frozen=True, slots=True)
class Register:
    """One float32 quantity: its 3xxxx register number and scale to our unit."""

    register: int
    scale: float

    @property
    def address(self) -> int:
        """Protocol address (register − 30001)."""
        return self.register - INPUT_REGISTER_BASE


@dataclass(frozen=True, slots=True)
class RegisterMap:
    """One meter model: per-outlet quantities, the device total, and the stated accuracy."""

    model: str
    accuracy_pct: float
    outlets: dict[int, dict[str, Register]]
    total: dict[str, Register]

    def blocks(self) -> list[tuple[int, int]]:
        """(start address, register count) requests covering every quantity, in order."""
        addresses = sorted(
            {r.address for q in (*self.outlets.values(), self.total) for r in q.values()}
        )
        blocks: list[list[int]] = []
        for address in addresses:
            if blocks and address + 2 - blocks[-1][0] <= MAX_BLOCK_REGISTERS:
                blocks[-1][1] = address + 2 - blocks[-1][0]
            else:
                blocks.append([address, 2])
        return [(start, count) for start, count in blocks]


@cache
def register_map(model: str) -> RegisterMap:
    """The register map of ``model`` (``sdm120`` or ``sdm630``) from ``registers.yaml``."""
    entry = yaml.safe_load(REGISTERS_YAML.read_text())[model]

    def quantities(spec: dict) -> dict[str, Register]:
        return {name: Register(int(r["register"]), float(r["scale"])) for name, r in spec.items()}

    return RegisterMap(
        model=model,
        accuracy_pct=float(entry["accuracy_pct"]),
        outlets={int(n): quantities(spec) for n, spec in entry["outlets"].items()},
        total=quantities(entry["total"]),
    )


def _float(registers: list[int]) -> float | None:
    # pymodbus annotates the result for every data type (int | float | str | list[...]); two
    # registers as FLOAT32 unpack to one float
    value = cast(
        float,
        ModbusSerialClient.convert_from_registers(registers, ModbusSerialClient.DATATYPE.FLOAT32),
    )
    return float(value) if math.isfinite(value) else None  # NaN/inf: no value


class EastronMeter:
    """An open Eastron SDM120/SDM630 on a serial line (see :func:`open_serial_meter`).

    Parameters
    ----------
    url : MeterUrl
        ``serial://DEVICE?protocol=sdm120|sdm630&baudrate=9600&unit=1``.
    timeout_s : float
        Seconds to wait for one reply.
    retries : int
        Retries after the first try.

    Raises
    ------
    MeterUnreachable
        If the serial device cannot be opened.
    """

    def __init__(self, url: MeterUrl, *, timeout_s: float = 1.0, retries: int = 1) -> None:
        self.url = url
        self._map = register_map(url.options["protocol"])
        self._unit = int(url.options["unit"])
        self._timeout_s, self._retries = timeout_s, retries
        self._rx = RxRecorder()
        self._lock = threading.Lock()
        self._client = ModbusSerialClient(
            url.host,
            baudrate=int(url.options["baudrate"]),
            timeout=timeout_s,
            retries=retries,
            trace_packet=self._rx,
        )
        if not self._client.connect():  # pymodbus keeps the reason to its log
            why = (
                "no such device"
                if "://" not in url.host and not os.path.exists(url.host)
                else "not a serial port, in use by another program, or no permission"
            )
            raise MeterUnreachable(f"{url.redacted()}: cannot open serial device {url.host}: {why}")

    @property
    def deadline_s(self) -> float:
        """Bound of one whole read: timeout × (retries + 1) per request, plus slack (s)."""
        requests = len(self._map.blocks())
        return self._timeout_s * (self._retries + 1) * requests + DEADLINE_SLACK_S

    def _where(self, start: int, count: int) -> str:
        first, last = start + INPUT_REGISTER_BASE, start + count - 1 + INPUT_REGISTER_BASE
        return f"{self.url.host} unit {self._unit}, input registers {first}-{last}"

    def _read_block(self, start: int, count: int) -> list[int]:
        waited_s = self._timeout_s * (self._retries + 1)
        try:
            reply = self._client.read_input_registers(start, count=count, device_id=self._unit)
        except ModbusIOException:
            raise explain_no_answer(
                self._rx.received, count=count, where=self._where(start, count), waited_s=waited_s
            ) from None
        except ConnectionException as exc:
            raise MeterUnreachable(f"{self._where(start, count)}: {exc}") from exc
        except ModbusException as exc:
            raise MeterProtocolError(f"{self._where(start, count)}: {exc}") from exc
        if reply.isError():
            code = getattr(reply, "exception_code", None)
            raise MeterProtocolError(
                f"{self._where(start, count)}: device answered Modbus exception {code}"
            )
        if len(reply.registers) != count:
            raise MeterProtocolError(
                f"{self._where(start, count)}: {len(reply.registers)} registers, asked {count}"
            )
        return list(reply.registers)

    def _read_blocking(self) -> Reading:
        if not self._lock.acquire(timeout=self.deadline_s):
            raise MeterTimeout(f"{self.url.redacted()}: a previous read is still running")
        try:
            values: dict[int, int] = {}
            for start, count in self._map.blocks():
                for offset, register in enumerate(self._read_block(start, count)):
                    values[start + offset] = register
            read_at = datetime.now(UTC)
        finally:
            self._lock.release()

        def quantity(spec: dict[str, Register], name: str) -> float | None:
            register = spec.get(name)
            if register is None:
                return None
            raw = _float([values[register.address], values[register.address + 1]])
            return None if raw is None else raw * register.scale

        outlets = tuple(
            OutletReading(
                outlet=n,
                **cast(dict[str, Any], {name: quantity(spec, name) for name in QUANTITIES}),
            )
            for n, spec in sorted(self._map.outlets.items())
        )
        return Reading(
            meter=self.url.redacted(),
            read_at=read_at,
            driver=self._map.model,
            outlets=outlets,
            total_power_w=quantity(self._map.total, "power_w"),
            total_energy_wh=quantity(self._map.total, "energy_wh"),
            accuracy_pct=self._map.accuracy_pct,
        )

    async def read(self) -> Reading:
        """Read every outlet (phase) and the total in :meth:`RegisterMap.blocks` requests.

        Raises
        ------
        MeterTimeout
            No reply (or the whole read exceeded :attr:`deadline_s`).
        MeterProtocolError
            CRC error, truncated frame, Modbus exception reply; the message names the device,
            unit and registers.
        """
        try:
            return await asyncio.wait_for(asyncio.to_thread(self._read_blocking), self.deadline_s)
        except TimeoutError:
            raise MeterTimeout(
                f"{self.url.redacted()}: read not done within {self.deadline_s:.1f} s"
            ) from None

    async def close(self) -> None:
        """Close the serial device. Idempotent."""
        self._client.close()
