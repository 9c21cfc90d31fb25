"""Tell apart why a Modbus-RTU read got no usable answer: silence, a CRC error, a short frame.

pymodbus drops a reply whose CRC fails, and waits for the rest of a short one, so both look
like a timeout from above. :class:`RxRecorder` keeps the bytes the client received (through
pymodbus's ``trace_packet`` hook) and :func:`explain_no_answer` classifies them.

Source of the frame layout: MODBUS over Serial Line V1.02 §2.5.1 (address, function, data,
CRC-16 low byte first) and MODBUS Application Protocol V1.1b3 §6.4 (0x04 Read Input Registers
reply: function, byte count = 2 × N, N registers).
"""

from __future__ import annotations

from pymodbus.framer.rtu import FramerRTU

from eams.meter.errors import MeterError, MeterProtocolError, MeterTimeout


class RxRecorder:
    """A ``trace_packet`` callback that remembers the bytes received since the last request."""

    def __init__(self) -> None:
        self.received = b""

    def __call__(self, sending: bool, data: bytes) -> bytes:
        if sending:
            self.received = b""
        elif data.startswith(self.received):  # pymodbus passes its growing buffer
            self.received = data
        else:
            self.received += data
        return data


def explain_no_answer(received: bytes, *, count: int, where: str, waited_s: float) -> MeterError:
    """The error for a 0x04 read of ``count`` registers that produced no valid reply.

    Parameters
    ----------
    received : bytes
        What arrived on the line after the request (possibly several retries' worth).
    count : int
        Registers requested; a full reply is 5 + 2·count bytes.
    where : str
        Device and register, for the message.
    waited_s : float
        The time waited, for the message.

    Returns
    -------
    MeterTimeout
        When nothing arrived.
    MeterProtocolError
        For a CRC mismatch, a truncated frame, or other bytes that are no valid reply.
    """
    if not received:
        return MeterTimeout(f"{where}: no answer within {waited_s:.1f} s")
    expected = 5 + 2 * count
    frame = received[:expected]
    if len(frame) < expected:
        return MeterProtocolError(
            f"{where}: truncated frame, {len(frame)} of {expected} bytes ({frame.hex(' ')})"
        )
    body, crc = frame[:-2], int.from_bytes(frame[-2:], "big")
    if FramerRTU.compute_CRC(body) != crc:
        return MeterProtocolError(
            f"{where}: CRC error, reply carries {crc:04x} but its bytes give "
            f"{FramerRTU.compute_CRC(body):04x}"
        )
    return MeterProtocolError(f"{where}: unexpected reply {frame.hex(' ')}")
