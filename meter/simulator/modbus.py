"""A simulated Eastron SDM120/SDM630 Modbus-RTU meter on a serial device, fed by the same
virtual nodes as the SNMP PDU.

Serve it on one end of a pty pair (``socat pty,raw,echo=0,link=A pty,raw,echo=0,link=B``) and
read the other end with ``serial://B?protocol=sdm120``. The register layout is the driver's
own map (``meter/serial/registers.yaml``), so what the driver decodes is what we encode; the
registers are refreshed from the simulator at every read request (pymodbus ``SimDevice``
action).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

from pymodbus.client import ModbusSerialClient
from pymodbus.framer import FramerType
from pymodbus.server import ModbusSerialServer
from pymodbus.simulator import DataType, SimData, SimDevice

from eams.meter.serial.eastron import Register, register_map
from eams.meter.simulator.agent import PduSimulator
from eams.meter.simulator.errors import SimulatorError

START_TIMEOUT_S = 5.0
_FLOAT32 = ModbusSerialClient.DATATYPE.FLOAT32


class ModbusMeterSimulator:
    """Serve PDU outlets as an Eastron meter (one outlet → SDM120, three → SDM630 phases).

    Parameters
    ----------
    sim : PduSimulator
        The simulator whose outlets feed the meter (ground truth via :meth:`PduSimulator.state`).
    outlets : sequence of int
        Simulator outlets (1-based) mapped to the meter's outlets 1, 2, …: one for ``sdm120``,
        three for ``sdm630``.
    device : Path or str
        Serial device to serve on (one end of a pty pair).
    model : {"sdm120", "sdm630"}
        Register map to imitate.
    unit : int
        Modbus unit (device id) to answer as.

    Raises
    ------
    SimulatorError
        If the outlet count does not fit the model, or the server cannot start on ``device``.
    """

    def __init__(
        self,
        sim: PduSimulator,
        outlets: Sequence[int],
        device: Path | str,
        *,
        model: str = "sdm120",
        unit: int = 1,
    ) -> None:
        self._map = register_map(model)
        if len(outlets) != len(self._map.outlets):
            raise SimulatorError(f"{model} has {len(self._map.outlets)} outlet(s), got {outlets}")
        self._sim, self._outlets = sim, list(outlets)
        self._device, self._unit = str(device), unit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: ModbusSerialServer | None = None
        self._thread: threading.Thread | None = None

    def _values(self) -> dict[Register, float]:
        """Every mapped register's value now, in the meter's units."""
        states = [self._sim.state(n) for n in self._outlets]
        si = {
            "power_w": sum(s.power_w for s in states),
            "energy_wh": sum(s.energy_wh for s in states),
        }
        values = {}
        for meter_outlet, state in zip(sorted(self._map.outlets), states, strict=True):
            quantities = {
                "voltage_v": self._sim.voltage_v,
                "current_a": state.current_a,
                "power_w": state.power_w,
                "energy_wh": state.energy_wh,
            }
            for name, register in self._map.outlets[meter_outlet].items():
                values[register] = quantities[name] / register.scale
        for name, register in self._map.total.items():
            values[register] = si[name] / register.scale
        return values

    async def _refresh(self, _fc, start_address, _address, _count, registers, _set_values):
        for register, value in self._values().items():
            offset = register.address - start_address
            registers[offset : offset + 2] = ModbusSerialClient.convert_to_registers(
                value, _FLOAT32
            )
        return None

    def start(self) -> ModbusMeterSimulator:
        """Start serving on a private event-loop thread; returns ``self``."""
        span = max(r.address for q in (*self._map.outlets.values(), self._map.total)
                   for r in q.values()) + 2  # fmt: skip
        device = SimDevice(
            self._unit,
            simdata=[SimData(0, values=[0] * span, datatype=DataType.REGISTERS)],
            action=self._refresh,
        )
        loop = asyncio.new_event_loop()

        async def serve() -> ModbusSerialServer:
            server = ModbusSerialServer(device, framer=FramerType.RTU, port=self._device)
            await server.serve_forever(background=True)
            return server

        try:
            self._server = loop.run_until_complete(asyncio.wait_for(serve(), START_TIMEOUT_S))
        except Exception as exc:
            loop.close()
            raise SimulatorError(f"Modbus meter on {self._device} did not start: {exc}") from exc
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the device. Idempotent."""
        loop, server, thread = self._loop, self._server, self._thread
        if loop is None or server is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(server.shutdown(), loop).result(START_TIMEOUT_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(START_TIMEOUT_S)
        loop.close()
        self._loop = self._server = self._thread = None

    def __enter__(self) -> ModbusMeterSimulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
