"""The client side of ``GET /decisions`` (:mod:`.route` serves it): what ``eams explain
--extender URL`` calls. Kept apart from the route so reading the record over HTTP needs httpx,
not FastAPI."""

from __future__ import annotations

import httpx
import msgspec

from eams.scheduler.record.errors import RecordReadError
from eams.scheduler.record.reader import Query
from eams.scheduler.record.schema import Record

PATH = "/decisions"
DEFAULT_LIMIT = 1000


class Served(msgspec.Struct):
    """The body of a 200 answer: the record version, the records (oldest first), how many
    lines the server could not decode, and the limit it applied."""

    version: int
    records: list[Record]
    skipped: int = 0
    limit: int | None = None


_decode_served = msgspec.json.Decoder(Served).decode


def fetch_records(
    url: str, query: Query, limit: int = DEFAULT_LIMIT, timeout_s: float = 10.0
) -> Served:
    """Ask the extender at ``url`` for the records about ``query``'s pod or node.

    Raises
    ------
    RecordReadError
        The extender cannot be reached, answers anything but 200 (its reason is quoted), or
        sends a body that is not a record answer.
    """
    params: dict[str, str | int] = {"limit": limit}
    params.update({"pod": query.pod} if query.pod is not None else {"node": query.node or ""})
    where = url.rstrip("/") + PATH
    try:
        answer = httpx.get(where, params=params, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise RecordReadError(f"extender {where}: {exc}") from exc
    if answer.status_code != 200:
        raise RecordReadError(f"extender {where}: HTTP {answer.status_code}: {_detail(answer)}")
    try:
        return _decode_served(answer.content)
    except msgspec.DecodeError as exc:
        raise RecordReadError(f"extender {where}: not a record answer: {exc}") from exc


def _detail(answer: httpx.Response) -> str:
    try:
        return str(answer.json().get("detail", answer.text))
    except ValueError:
        return answer.text[:200]
