"""The simulator's MIB instrumentation: GET, GETNEXT (GETBULK) and SET on a snapshot of the
object tree, answering as an SNMP agent does (RFC 3416 §4.2).

SET is all-or-nothing: every variable binding is checked first, in this order, and the first
failure is the answer (RFC 3416 §4.2.5): noAccess when the request's write view does not
include the object (a read-only community or user), noCreation for an object the agent does
not have, notWritable for one it has but nobody may write, wrongType for a value that is not an
INTEGER, wrongValue for an INTEGER it does not accept. Only then are the writes applied.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from pyasn1.type import univ
from pysnmp.proto.api import v2c
from pysnmp.smi import error as smi_error
from pysnmp.smi.instrum import AbstractMibInstrumController

OID = tuple[int, ...]
Snapshot = Callable[[], tuple[list[OID], dict[OID, object]]]
Prepare = Callable[[int], Callable[[], None]]
"""``prepare(value)`` checks an INTEGER for one object and returns the change that writes it;
raises ``pysnmp.smi.error.WrongValueError`` for a value the object does not accept."""
Writer = Callable[[OID], Prepare | None]
"""``writer(oid)``: how to write that object, or ``None`` when nobody may write it."""


class SnapshotInstrum(AbstractMibInstrumController):
    """Answer requests from ``snapshot()`` (sorted OIDs, OID → value) and writes via ``writer``."""

    def __init__(self, snapshot: Snapshot, writer: Writer) -> None:
        self._snapshot = snapshot
        self._writer = writer

    def read_variables(self, *var_binds: Any, **context: Any) -> list[tuple[Any, Any]]:
        oids, objects = self._snapshot()
        answer = []
        for name, _ in var_binds:
            oid = tuple(name)
            value = objects.get(oid)
            if value is None:
                # noSuchInstance when the column exists, noSuchObject otherwise (RFC 3416 §4.2.1)
                i = bisect.bisect_left(oids, oid[:-1])
                column_exists = i < len(oids) and oids[i][: len(oid) - 1] == oid[:-1]
                value = v2c.NoSuchInstance() if column_exists else v2c.NoSuchObject()
            answer.append((v2c.ObjectIdentifier(oid), value))
        return answer

    def read_next_variables(self, *var_binds: Any, **context: Any) -> list[tuple[Any, Any]]:
        oids, objects = self._snapshot()
        answer = []
        for name, _ in var_binds:
            i = bisect.bisect_right(oids, tuple(name))
            if i < len(oids):
                answer.append((v2c.ObjectIdentifier(oids[i]), objects[oids[i]]))
            else:
                answer.append((name, v2c.EndOfMibView()))
        return answer

    def write_variables(self, *var_binds: Any, **context: Any) -> list[tuple[Any, Any]]:
        _, objects = self._snapshot()
        allowed = context.get("acFun")
        changes = []
        for idx, (name, value) in enumerate(var_binds):
            oid = tuple(name)
            # verify_access answers True when the object is outside the write view (notInView)
            if allowed is not None and allowed("write", (name, value), **context):
                raise smi_error.NoAccessError(name=name, idx=idx)
            if oid not in objects:
                raise smi_error.NoCreationError(name=name, idx=idx)
            prepare = self._writer(oid)
            if prepare is None:
                raise smi_error.NotWritableError(name=name, idx=idx)
            if value.getTagSet() != univ.Integer.tagSet:  # INTEGER / Integer32, not Gauge32...
                raise smi_error.WrongTypeError(name=name, idx=idx)
            try:
                changes.append(prepare(int(value)))
            except smi_error.WrongValueError:
                raise smi_error.WrongValueError(name=name, idx=idx) from None
        for change in changes:
            change()
        return [(name, value) for name, value in var_binds]
