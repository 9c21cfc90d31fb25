"""``BlockingMeter``: an async meter driven from synchronous code (calibrate sweeps, agent).

The meter lives on a private event loop in a daemon thread; each ``read()`` submits the
coroutine there and waits. The wait is bounded twice: by the meter's own per-request deadline
and by an outer guard here, so a caller can never hang on a meter. Any number of threads may
call ``read()`` at once, the first read too: the reads run concurrently on that one loop and
share one SNMP engine.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from eams.meter.errors import MeterError, MeterTimeout
from eams.meter.open import open_meter
from eams.meter.reading import Reading
from eams.meter.url import MeterUrl

if TYPE_CHECKING:
    from eams.meter.snmp.switch import SwitchResult

T = TypeVar("T")

#: Seconds a blocking read may take at most beyond the meter's own bounds (a walk is several
#: requests, each bounded; this is the guard for the whole call).
GUARD_S = 60.0


class BlockingMeter:
    """A meter with a synchronous ``read()``; arguments as :func:`~eams.meter.open.open_meter`.

    Examples
    --------
    >>> with BlockingMeter("snmp://public@127.0.0.1:1161") as meter:  # doctest: +SKIP
    ...     reading = meter.read()

    Raises
    ------
    BadMeterUrl, UnknownDevice
        At construction, as :func:`open_meter`.
    """

    def __init__(self, url: str | MeterUrl, **open_meter_kwargs: Any) -> None:
        self._meter = open_meter(url, **open_meter_kwargs)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="eams-meter-loop", daemon=True
        )
        self._thread.start()
        self._closed = False

    @property
    def meter(self) -> Any:
        """The underlying async meter (e.g. an ``SnmpMeter``; use it only from its loop)."""
        return self._meter

    def _run(self, coro: Coroutine[Any, Any, T], guard_s: float = GUARD_S) -> T:
        if self._closed:
            coro.close()
            raise MeterError(f"{self._meter.url.redacted()}: meter is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=guard_s)
        except TimeoutError:
            future.cancel()
            raise MeterTimeout(
                f"{self._meter.url.redacted()}: call did not finish in {guard_s:.0f} s"
            ) from None

    def read(self) -> Reading:
        """Read every outlet once (see the meter's ``read``); raises MeterError subclasses."""
        return self._run(self._meter.read())

    def switch(self, outlet: int, action: str, **kwargs: Any) -> SwitchResult:
        """Switch an outlet and confirm it: :func:`eams.meter.snmp.switch.switch_outlet` with
        the same keyword arguments and errors.

        The outer guard is :data:`GUARD_S` plus two read-back waits (a reboot has two phases
        on PDUs without a reboot command).
        """
        from eams.meter.snmp.switch import DEFAULT_WAIT_S, switch_outlet  # SNMP meters only

        wait_s = float(kwargs.get("wait_s", DEFAULT_WAIT_S))
        return self._run(switch_outlet(self._meter, outlet, action, **kwargs), GUARD_S + 2 * wait_s)

    def close(self) -> None:
        """Close the meter and stop the loop thread. Idempotent."""
        if self._closed:
            return
        try:
            self._run(self._meter.close())
        finally:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()

    def __enter__(self) -> BlockingMeter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
