"""The SNMP transport: GET and GETBULK walks over pysnmp 7 (asyncio), with one error translator.

This is the only module of EAMS that imports pysnmp's client side. Everything above it sees
plain Python values (:data:`Value`) and :mod:`eams.meter.errors` exceptions, so a driver can be
tested with :class:`~eams.meter.snmp.fake.FakeSnmpClient` (an ``.snmprec`` file) instead. SET
(switching outlets) writes one INTEGER per request; an error status in the answer becomes
:class:`~eams.meter.errors.WriteRefused` naming the status (RFC 3416 §4.2.5).

Every request is bounded by ``asyncio.timeout(timeout_s × (retries + 1) + slack)``: pysnmp's own
retry loop should end first, the outer deadline is the guarantee that a black-holed agent cannot
hang a read. Walks (RFC 3416 GETBULK) fetch several columns per request and stop each column at
the first OID outside its subtree.

A client's pysnmp engine (its socket and timers) is built on the first request, in the event
loop running it, and belongs to that loop until :meth:`SnmpClient.close`
(:class:`~eams.meter.snmp.dispatch.LoopEngine`): concurrent first requests share it, and a
request or close from another loop raises :class:`~eams.meter.errors.WrongEventLoop` at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    bulk_cmd,
    get_cmd,
    set_cmd,
)
from pysnmp.hlapi.v3arch.asyncio import auth as _auth
from pysnmp.proto import errind
from pysnmp.proto.rfc1902 import Integer32
from pysnmp.proto.rfc1905 import EndOfMibView, NoSuchInstance, NoSuchObject

from eams.meter.errors import (
    MeterAuthError,
    MeterError,
    MeterProtocolError,
    MeterTimeout,
    MeterUnreachable,
    WriteRefused,
)
from eams.meter.snmp.dispatch import LoopEngine
from eams.meter.url import MeterUrl

#: A decoded SNMP value: ``int`` (Integer32, Gauge32, Counter32/64, TimeTicks), ``str``
#: (OctetString that is valid UTF-8, OBJECT IDENTIFIER in dotted form, IpAddress) or ``bytes``
#: (any other OctetString); ``None`` for noSuchObject / noSuchInstance / endOfMibView.
Value = int | str | bytes | None

#: Seconds added to timeout × (retries + 1) for the outer deadline of one request.
DEADLINE_SLACK_S = 0.5
#: Varbinds asked for per GETBULK (split over the unfinished columns). An agent that cannot fit
#: them answers fewer (RFC 3416 §4.2.3), never an error; snmpsim answers at most 64.
MAX_VARBINDS = 60
#: Safety cap on GETBULK requests in one walk (a broken agent must not loop us forever).
MAX_WALK_REQUESTS = 500

_AUTH = {
    "MD5": _auth.USM_AUTH_HMAC96_MD5,
    "SHA": _auth.USM_AUTH_HMAC96_SHA,
    "SHA224": _auth.USM_AUTH_HMAC128_SHA224,
    "SHA256": _auth.USM_AUTH_HMAC192_SHA256,
    "SHA384": _auth.USM_AUTH_HMAC256_SHA384,
    "SHA512": _auth.USM_AUTH_HMAC384_SHA512,
}
_PRIV = {
    "DES": _auth.USM_PRIV_CBC56_DES,
    "AES": _auth.USM_PRIV_CFB128_AES,
    "AES192": _auth.USM_PRIV_CFB192_AES,
    "AES256": _auth.USM_PRIV_CFB256_AES,
}
# Reports a v3 agent sends for bad credentials (RFC 3414 §3.2: usmStatsWrongDigests,
# usmStatsDecryptionErrors, usmStatsUnknownUserNames...), as pysnmp names them.
_AUTH_ERRORS = (
    errind.WrongDigest,
    errind.DecryptionError,
    errind.UnknownUserName,
    errind.UnknownSecurityName,
    errind.AuthenticationFailure,
    errind.AuthenticationError,
    errind.UnsupportedSecurityLevel,
    errind.UnknownCommunityName,
)


#: SET error statuses (RFC 3416 §4.2.5) that mean "you may not write this", with what to do.
_NO_WRITE_ACCESS = {
    "noAccess": "has no write access to it",
    "authorizationError": "is not authorized to write",
    "notWritable": "may not write it (a read-only community or user, or a read-only object)",
    "readOnly": "may not write it (a read-only community or user, or a read-only object)",
}
#: SET error statuses that reject the value or the object rather than the credentials.
_BAD_WRITE = {
    "wrongValue",
    "wrongType",
    "badValue",
    "wrongLength",
    "wrongEncoding",
    "inconsistentValue",
    "inconsistentName",
}


def deadline_s(timeout_s: float, retries: int) -> float:
    """The outer bound of one request: ``timeout_s × (retries + 1) + DEADLINE_SLACK_S`` (s)."""
    return timeout_s * (retries + 1) + DEADLINE_SLACK_S


def oid_in_subtree(oid: str, root: str) -> bool:
    """True when dotted ``oid`` is ``root`` or lies below it (``1.2.10`` is not in ``1.2.1``)."""
    return oid == root or oid.startswith(root + ".")


def oid_key(oid: str) -> tuple[int, ...]:
    """Dotted ``oid`` as a tuple of ints: sorts in SNMP (lexicographic by arc) order."""
    return tuple(int(p) for p in oid.split("."))


def _to_value(obj: Any) -> Value:
    if isinstance(obj, NoSuchObject | NoSuchInstance | EndOfMibView):
        return None
    tag = obj.__class__.__name__
    if tag == "ObjectIdentifier" or tag == "ObjectName":
        return str(obj)
    if tag == "IpAddress":
        return ".".join(str(b) for b in obj.asOctets())
    if tag in ("OctetString", "DisplayString", "Opaque", "Bits"):
        raw = obj.asOctets()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
    return int(obj)


class SnmpClient:
    """GET and GETBULK against one agent, named by a :class:`~eams.meter.url.MeterUrl`.

    Parameters
    ----------
    url : MeterUrl
        ``snmp://`` (v2c, community from the URL) or ``snmpv3://`` (authPriv; keys from
        :meth:`MeterUrl.snmp_keys`).
    timeout_s : float
        Seconds to wait for one answer before pysnmp retries.
    retries : int
        Retries after the first try (0 = one try).
    max_repetitions : int
        Upper bound of GETBULK max-repetitions (rows per column per request); each request
        asks for ``min(max_repetitions, MAX_VARBINDS // columns still walking)``.

    Attributes
    ----------
    requests : int
        SNMP requests sent so far (GET and GETBULK PDUs, not counting pysnmp's retries); the
        benchmark reads it.

    Raises
    ------
    BadMeterUrl
        For ``snmpv3://`` without the key environment variables.
    """

    def __init__(
        self, url: MeterUrl, *, timeout_s: float = 1.0, retries: int = 1, max_repetitions: int = 60
    ) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.retries = retries
        self.max_repetitions = max_repetitions
        self.requests = 0
        self._where = f"{url.host}:{url.port}"
        if url.scheme == "snmpv3":
            auth_key, priv_key = url.snmp_keys()
            self._auth: Any = UsmUserData(
                url.user,
                authKey=auth_key,
                privKey=priv_key,
                authProtocol=_AUTH[url.options["auth"]],
                privProtocol=_PRIV[url.options["priv"]],
            )
        else:
            self._auth = CommunityData(url.community or "public", mpModel=1)
        self._context = ContextData(contextName=url.options.get("context", ""))
        self._engine = LoopEngine(url.redacted())
        self._target: UdpTransportTarget | None = None

    async def _connect(self) -> tuple[SnmpEngine, UdpTransportTarget]:
        engine = self._engine.get()  # before any await: concurrent first requests share it
        if self._target is None:
            try:
                target = await UdpTransportTarget.create(
                    (self.url.host, self.url.port), timeout=self.timeout_s, retries=self.retries
                )
            except Exception as exc:  # pysnmp wraps the resolver's socket.gaierror
                cause = exc.__cause__ or exc.__context__ or exc
                raise MeterUnreachable(
                    f"{self._where}: cannot resolve or address the host: {cause}"
                ) from exc
            if self._engine.current is not engine:
                raise MeterError(f"{self._where}: the meter was closed during the request")
            self._target = self._target or target  # a concurrent first request may be first
        return engine, self._target

    @contextlib.contextmanager
    def _translate(self, oid: str) -> Iterator[None]:
        """Turn every pysnmp/OS failure of one request into a MeterError naming host:port, OID."""
        try:
            yield
        except MeterError:
            raise
        except TimeoutError:
            raise self._no_answer(oid) from None
        except OSError as exc:
            raise MeterUnreachable(f"{self._where}: {oid}: {exc.strerror or exc}") from exc
        except Exception as exc:  # pysnmp raises PySnmpError and plain errors alike
            raise MeterProtocolError(f"{self._where}: {oid}: {exc}") from exc

    def _no_answer(self, oid: str) -> MeterTimeout:
        limit = deadline_s(self.timeout_s, self.retries)
        hint = (
            "no answer; wrong community or host down"
            if self.url.scheme == "snmp"
            else "no answer; host down or not an SNMPv3 agent"
        )
        return MeterTimeout(f"{self._where}: {oid}: {hint} (waited {limit:.1f} s)")

    def _check(self, oid: str, indication: Any, status: Any, index: Any, var_binds: Any) -> None:
        if indication:
            if isinstance(indication, errind.RequestTimedOut):
                raise self._no_answer(oid)
            if isinstance(indication, _AUTH_ERRORS):
                raise MeterAuthError(
                    f"{self._where}: {oid}: SNMPv3 credentials refused ({indication}); "
                    f"check user, auth/priv protocol and keys"
                )
            raise MeterProtocolError(f"{self._where}: {oid}: {indication}")
        if status:
            bad = oid
            if index and 0 < int(index) <= len(var_binds):
                bad = str(var_binds[int(index) - 1][0])
            text = status.prettyPrint() if hasattr(status, "prettyPrint") else str(status)
            raise MeterProtocolError(f"{self._where}: {bad}: agent error {text}")

    async def _send(self, label: str, command: Any, *args: Any) -> tuple[Any, Any, Any, Any]:
        """One request (``get_cmd``, ``set_cmd``, ``bulk_cmd`` with its ``args``), counted and
        bounded by the deadline; pysnmp/OS failures become MeterErrors naming ``label``."""
        engine, target = await self._connect()
        self.requests += 1
        with self._translate(label):
            async with asyncio.timeout(deadline_s(self.timeout_s, self.retries)):
                answer: tuple[Any, Any, Any, Any] = await command(
                    engine, self._auth, target, self._context, *args, lookupMib=False
                )
        return answer

    async def get(self, oids: Sequence[str]) -> dict[str, Value]:
        """GET ``oids`` in one request.

        Returns
        -------
        dict of str to Value
            Every requested OID; ``None`` where the agent answered noSuchObject/noSuchInstance.

        Raises
        ------
        MeterTimeout, MeterAuthError, MeterUnreachable, MeterProtocolError, WrongEventLoop
        """
        label = oids[0] if len(oids) == 1 else f"{oids[0]} (+{len(oids) - 1} more)"
        request = (ObjectType(ObjectIdentity(o)) for o in oids)
        indication, status, index, var_binds = await self._send(label, get_cmd, *request)
        self._check(label, indication, status, index, var_binds)
        return {str(name): _to_value(value) for name, value in var_binds}

    async def set(self, oid: str, value: int) -> None:
        """SET ``oid`` to the INTEGER ``value`` in one request (RFC 3416 §4.2.5).

        Raises
        ------
        WriteRefused
            If the agent answers with an error status: ``noAccess``, ``notWritable``,
            ``authorizationError`` (a read-only community or user), a rejected value
            (``wrongValue``, ``inconsistentValue``...) or object (``noCreation``); the message
            names the status, host:port and OID.
        MeterTimeout, MeterAuthError, MeterUnreachable, MeterProtocolError, WrongEventLoop
        """
        request = ObjectType(ObjectIdentity(oid), Integer32(value))
        indication, status, _, _ = await self._send(oid, set_cmd, request)
        if status:
            raise self._refused(oid, value, status.prettyPrint())
        self._check(oid, indication, status, 0, [])

    def _refused(self, oid: str, value: int, status: str) -> WriteRefused:
        where = f"{self._where}: SET {oid} = {value} refused ({status})"
        who = "this community" if self.url.scheme == "snmp" else f"SNMPv3 user {self.url.user!r}"
        if status in _NO_WRITE_ACCESS:
            fix = (
                "give the PDU's write community in the URL (snmp://WRITE_COMMUNITY@HOST)"
                if self.url.scheme == "snmp"
                else "use a v3 user with write access"
            )
            return WriteRefused(f"{where}: {who} {_NO_WRITE_ACCESS[status]}; {fix}")
        if status in _BAD_WRITE:
            return WriteRefused(f"{where}: the agent does not accept this value for the object")
        if status == "noCreation":
            return WriteRefused(f"{where}: the agent has no such object (this model cannot do it)")
        return WriteRefused(f"{where}: agent error")

    async def walk(self, roots: Sequence[str]) -> dict[str, list[tuple[str, Value]]]:
        """Walk every subtree in ``roots`` together with GETBULK (RFC 3416 §4.2.3).

        All unfinished columns share each request; a column ends at its first OID outside its
        subtree (that varbind is dropped), at endOfMibView, or when an answer does not advance.

        Returns
        -------
        dict of str to list of (oid, Value)
            Per root, its instances in agent order (empty when the subtree is empty).

        Raises
        ------
        MeterTimeout, MeterAuthError, MeterUnreachable, MeterProtocolError, WrongEventLoop
        """
        found: dict[str, list[tuple[str, Value]]] = {root: [] for root in roots}
        cursor = {root: root for root in roots}
        active = list(dict.fromkeys(roots))
        for _ in range(MAX_WALK_REQUESTS):
            if not active:
                return found
            repetitions = max(1, min(self.max_repetitions, MAX_VARBINDS // len(active)))
            request = (ObjectType(ObjectIdentity(cursor[r])) for r in active)
            indication, status, index, var_binds = await self._send(
                active[0], bulk_cmd, 0, repetitions, *request
            )
            self._check(active[0], indication, status, index, var_binds)
            active = self._absorb(active, var_binds, found, cursor)
        raise MeterProtocolError(
            f"{self._where}: walk of {', '.join(roots)} did not end after "
            f"{MAX_WALK_REQUESTS} requests"
        )

    @staticmethod
    def _absorb(
        active: list[str],
        var_binds: Sequence[Any],
        found: dict[str, list[tuple[str, Value]]],
        cursor: dict[str, str],
    ) -> list[str]:
        """File one GETBULK answer (repetition-major order) under its roots; return those left."""
        done: set[str] = set()
        width = len(active)
        for position, (name, value) in enumerate(var_binds):
            root = active[position % width]
            if root in done:
                continue
            oid = str(name)
            if isinstance(value, EndOfMibView) or not oid_in_subtree(oid, root):
                done.add(root)
                continue
            if found[root] and oid_key(oid) <= oid_key(found[root][-1][0]):
                done.add(root)  # not increasing (a broken agent): stop rather than loop
                continue
            found[root].append((oid, _to_value(value)))
            cursor[root] = oid
        if not var_binds:
            return []
        return [root for root in active if root not in done]

    async def close(self) -> None:
        """Close the engine and its socket; the client may then be used again in any loop.

        Answers the loop has already read (a late answer arriving as the meter closes) are
        dropped by the engine, without a traceback
        (:meth:`~eams.meter.snmp.dispatch.LoopEngine.close`). Idempotent.

        Raises
        ------
        WrongEventLoop
            If called from an event loop other than the one the client first read in.
        """
        await self._engine.close()
        self._target = None
