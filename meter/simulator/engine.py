"""The simulator's SNMP engine: transport, who may read and who may write (VACM, RFC 3415).

- the read community reads everything and writes nothing: its write view excludes the whole
  tree, so a SET is answered ``noAccess`` (the object is not in the request's write view), as
  net-snmp answers a ``rocommunity``;
- the write community, and the SNMPv3 authPriv user (HMAC-SHA-96 / AES-128-CFB, RFC 3414 /
  3826), read and write;
- any other community gets no answer at all (a timeout), as on a real agent.
"""

from __future__ import annotations

import asyncio
import socket

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config, engine
from pysnmp.entity.rfc3413 import cmdrsp, context
from pysnmp.proto.api import v2c

from eams.meter.simulator.instrum import SnapshotInstrum

_TREE = (1, 3, 6)
_READ_VIEW, _WRITE_VIEW, _NO_WRITE_VIEW = "eams-read", "eams-write", "eams-no-write"


def _grant(
    snmp_engine: engine.SnmpEngine, model: int, security_name: str, level: str, write: bool
) -> None:
    """Let ``security_name`` read the whole tree, and write it or nothing."""
    group = f"eams-{model}-{security_name}"
    config.add_vacm_group(snmp_engine, group, model, security_name)
    write_view = _WRITE_VIEW if write else _NO_WRITE_VIEW
    config.add_vacm_access(
        snmp_engine, group, b"", model, level, "exact", _READ_VIEW, write_view, _READ_VIEW
    )


def build_engine(
    loop: asyncio.AbstractEventLoop,
    sock: socket.socket,
    instrum: SnapshotInstrum,
    *,
    community: str,
    write_community: str | None,
    v3: tuple[str, str, str] | None,
) -> engine.SnmpEngine:
    """An engine answering GET, GETNEXT, GETBULK and SET on ``sock`` from ``instrum``.

    Parameters
    ----------
    loop : asyncio.AbstractEventLoop
        The loop the engine runs on (call this inside it).
    sock : socket.socket
        A bound UDP socket.
    instrum : SnapshotInstrum
        The object tree.
    community, write_community : str
        v2c communities: read-only, and read-write (``None``: no v2c writes; the same as
        ``community``: that one community reads and writes).
    v3 : (user, auth key, priv key) or None
        An SNMPv3 authPriv user with read and write access.
    """
    snmp_engine = engine.SnmpEngine()
    transport = udp.UdpAsyncioTransport(loop=loop).open_server_mode(sock=sock)
    config.add_transport(snmp_engine, udp.DOMAIN_NAME, transport)
    config.add_context(snmp_engine, b"")
    config.add_vacm_view(snmp_engine, _READ_VIEW, "included", _TREE, b"")
    config.add_vacm_view(snmp_engine, _WRITE_VIEW, "included", _TREE, b"")
    # a view holding only an exclusion: every object is "notInView" for it (RFC 3415 §3.2)
    config.add_vacm_view(snmp_engine, _NO_WRITE_VIEW, "excluded", _TREE, b"")
    config.add_v1_system(snmp_engine, "eams-read", community)
    _grant(snmp_engine, 2, "eams-read", "noAuthNoPriv", write=write_community == community)
    if write_community is not None and write_community != community:
        config.add_v1_system(snmp_engine, "eams-write", write_community)
        _grant(snmp_engine, 2, "eams-write", "noAuthNoPriv", write=True)
    if v3 is not None:
        user, auth_key, priv_key = v3
        config.add_v3_user(
            snmp_engine,
            user,
            config.USM_AUTH_HMAC96_SHA,
            auth_key,
            config.USM_PRIV_CFB128_AES,
            priv_key,
        )
        _grant(snmp_engine, 3, user, "authPriv", write=True)
    snmp_context = context.SnmpContext(snmp_engine)
    snmp_context.unregister_context_name(b"")  # replace the engine's own MIB tree by ours
    snmp_context.register_context_name(v2c.OctetString(""), instrum)
    for responder in (
        cmdrsp.GetCommandResponder,
        cmdrsp.NextCommandResponder,
        cmdrsp.BulkCommandResponder,
        cmdrsp.SetCommandResponder,
    ):
        responder(snmp_engine, snmp_context)
    return snmp_engine
