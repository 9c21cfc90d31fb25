"""kube-scheduler's side of the extender wire: one keep-alive connection, answers decoded as Go.

Source: kubernetes/kubernetes ``pkg/scheduler/extender.go`` (``send``, ``Filter``,
``Prioritize``) and kube-scheduler ``extender/v1/types.go``, summarised in
``../shared/reference/extender-protocol.md`` §1.1, §2.1–2.3:

* every call is a POST of JSON to ``urlPrefix/verb`` over Go's ``http.Client``, which keeps one
  idle connection per host alive and, the calls being serial, reuses it for every pod;
  ``httpTimeout`` bounds the whole call (5 s when unset);
* only status 200 is success; the body is decoded by ``encoding/json`` into the result struct:
  object keys match fields case-insensitively (the last one wins), unknown keys are ignored,
  ``null`` leaves a field unset, and a type mismatch — a number with a fraction or exponent for
  the ``int64`` ``Score``, an object for the ``HostPriorityList`` array — fails the decode,
  which the scheduler treats like a transport error;
* filter: a non-empty ``Error`` fails the call; with ``nodeCacheCapable`` a non-null
  ``NodeNames`` must name only input nodes (else the call fails), otherwise ``Nodes`` is used,
  and with both null no node passes.

The decoders read the JSON with msgspec (ints and floats apart, as Go's decoder tells them)
and raise :class:`ExtenderCallError` where Go's client would return an error.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec

from eams.scheduler.bench.errors import ExtenderCallError

DEFAULT_TIMEOUT_S = 5.0  # DefaultExtenderTimeout, kubernetes pkg/scheduler/extender.go
INT64_MAX = 2**63 - 1


def _fields(obj: Any, names: tuple[str, ...], where: str) -> dict[str, Any]:
    """Go's struct decode of a JSON object: keys folded to ``names``, the last key wins."""
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise ExtenderCallError(f"{where}: cannot decode {type(obj).__name__} into a struct")
    folded = {n.lower(): n for n in names}
    found: dict[str, Any] = {}
    for key, value in obj.items():
        name = folded.get(key.lower())
        if name is not None and value is not None:
            found[name] = value
    return found


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ExtenderCallError(f"{where}: cannot decode into map[string]string")
    return dict(value)


def _string_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ExtenderCallError(f"{where}: cannot decode into []string")
    return list(value)


@dataclass(frozen=True)
class FilterOutcome:
    """What kube-scheduler keeps of a successful filter answer.

    Attributes
    ----------
    passed : list of str
        Nodes that pass, in the answer's order.
    failed : dict of str to str
        ``FailedNodes`` minus the unresolvable ones: *Unschedulable* (preemption may help).
    unresolvable : dict of str to str
        ``FailedAndUnresolvableNodes``: *UnschedulableAndUnresolvable*.
    """

    passed: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)


def decode_filter(
    status: int, body: bytes, sent: list[str], node_cache_capable: bool = True
) -> FilterOutcome:
    """Decode a filter answer as kube-scheduler's ``HTTPExtender.Filter`` does.

    Parameters
    ----------
    status : int
        HTTP status of the answer.
    body : bytes
        The answer body.
    sent : list of str
        The node names the request listed (``NodeNames``, or the names of ``Nodes.items``).
    node_cache_capable : bool
        The extender's ``nodeCacheCapable`` setting.

    Raises
    ------
    ExtenderCallError
        Not 200, undecodable, a non-empty ``Error``, or a returned name not in ``sent``.
    """
    data = _json(status, body, "filter")
    keys = ("Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error")
    result = _fields(data, keys, "ExtenderFilterResult")
    error = result.get("Error", "")
    if not isinstance(error, str):
        raise ExtenderCallError("ExtenderFilterResult.Error: cannot decode into string")
    failed = _string_map(result.get("FailedNodes", {}), "FailedNodes")
    unresolvable = _string_map(
        result.get("FailedAndUnresolvableNodes", {}), "FailedAndUnresolvableNodes"
    )
    names = _string_list(result["NodeNames"], "NodeNames") if "NodeNames" in result else None
    nodes = _fields(result.get("Nodes"), ("Items",), "Nodes")
    if error:
        raise ExtenderCallError(f"filter: extender error {error!r}")
    if node_cache_capable and names is not None:
        known = set(sent)
        stray = [n for n in names if n not in known]
        if stray:
            raise ExtenderCallError(
                f"filter: claims a filtered node {stray[0]!r} which is not in the input list"
            )
        passed = names
    elif "Nodes" in result:
        items = nodes.get("Items", [])
        if not isinstance(items, list):
            raise ExtenderCallError("Nodes.items: cannot decode into []v1.Node")
        passed = [((i or {}).get("metadata") or {}).get("name", "") for i in items]
    else:
        passed = []
    failed = {n: r for n, r in failed.items() if n not in unresolvable}
    return FilterOutcome(passed, failed, unresolvable)


def decode_priorities(status: int, body: bytes) -> dict[str, int]:
    """Decode a prioritize answer (a bare ``HostPriorityList``) as kube-scheduler does.

    Returns
    -------
    dict of str to int
        Score per host, summed when a host is listed twice (``prioritizeNodes`` adds up).

    Raises
    ------
    ExtenderCallError
        Not 200, not an array, an entry not an object, a non-string ``Host`` or a ``Score`` that
        is not an integer literal in int64 range.
    """
    if status == 200:
        try:  # the usual answer: exact keys, string hosts, int64 scores (msgspec checks them)
            entries = _decode_priorities(body)
            scores: dict[str, int] = {e.Host: e.Score for e in entries}
            if len(scores) == len(entries):
                return scores
            scores = {}  # a host listed twice: its scores add up
            for entry in entries:
                scores[entry.Host] = scores.get(entry.Host, 0) + entry.Score
            return scores
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass  # decoded again below, with Go's folding of keys and its error
    data = _json(status, body, "prioritize")
    if data is None:
        return {}
    if not isinstance(data, list):
        raise ExtenderCallError("prioritize: cannot decode object into HostPriorityList")
    scores = {}
    for i, entry in enumerate(data):
        got = _fields(entry, ("Host", "Score"), f"HostPriorityList[{i}]")
        host, score = got.get("Host", ""), got.get("Score", 0)
        if not isinstance(host, str):
            raise ExtenderCallError(f"HostPriorityList[{i}].Host: cannot decode into string")
        if type(score) is not int or abs(score) > INT64_MAX:
            raise ExtenderCallError(f"HostPriorityList[{i}].Score: {score!r} is not an int64")
        scores[host] = scores.get(host, 0) + score
    return scores


class _HostPriority(msgspec.Struct):
    Host: str
    Score: Annotated[int, msgspec.Meta(ge=-INT64_MAX - 1, le=INT64_MAX)]


_decode_priorities = msgspec.json.Decoder(list[_HostPriority]).decode


def _json(status: int, body: bytes, verb: str) -> Any:
    if status != 200:
        raise ExtenderCallError(f"failed {verb} with extender, code {status}")
    try:
        return msgspec.json.decode(body)  # ints stay ints, 1.0 and 1e1 are floats, as in JSON
    except msgspec.DecodeError as exc:
        raise ExtenderCallError(f"{verb}: undecodable answer ({exc})") from None


class KeepAliveConnection:
    """One HTTP/1.1 keep-alive connection, the way Go's client reuses it for serial calls.

    A request that finds its reused connection closed by the server before any answer is sent
    again on a new connection (Go retries such idempotent-looking failures once); a request
    over ``timeout_s`` closes the connection and raises. Bodies are read by ``Content-Length``
    or chunked transfer coding, as uvicorn sends them.

    Parameters
    ----------
    host : str
    port : int
    timeout_s : float
        ``httpTimeout`` of each call, s.
    """

    def __init__(self, host: str, port: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """POST ``body`` as JSON; returns (status, body).

        Raises
        ------
        ExtenderCallError
            Connection refused or reset, or no whole answer within ``timeout_s``.
        """
        return await self.request("POST", path, body)

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        """Send one request; returns (status, body) (see :meth:`post`)."""
        try:
            return await asyncio.wait_for(self._exchange(method, path, body), self.timeout_s)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            self.close()
            raise ExtenderCallError(f"{method} {path}: {type(exc).__name__} {exc}") from None

    async def _exchange(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        for attempt in (0, 1):
            reused = self._streams is not None
            if self._streams is None:
                self._streams = await asyncio.open_connection(self.host, self.port)
            reader, writer = self._streams
            writer.write(head + body)
            try:
                status_line = await reader.readline()
            except ConnectionError:
                status_line = b""
            if status_line:
                break
            self.close()
            if not reused or attempt:
                raise ConnectionResetError("connection closed before an answer")
        status = int(status_line.split()[1])
        length, chunked, closing = 0, False, False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                closing = b"close" in value.lower()
        content = await (self._chunks(reader) if chunked else reader.readexactly(length))
        if closing:
            self.close()
        return status, content

    @staticmethod
    async def _chunks(reader: asyncio.StreamReader) -> bytes:
        parts = []
        while size := int((await reader.readline()).split(b";")[0], 16):
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        await reader.readline()
        return b"".join(parts)

    def close(self) -> None:
        """Close the connection (the next request opens a new one)."""
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None
