"""The decision record: one JSON object per line, versioned, tagged by ``kind``.

Five kinds (the table with every field is in this folder's README.md):

``placement``
    One pod's placement decision from one clearing: the pod, the clearing, the mode, the
    candidate nodes with their bids, prices, headroom and telemetry age, what gated the others,
    the cleared node, the method and its certificate.
``power``
    One power-manager decision about a node: the transition, its reason and the numbers behind
    it.
``bound``
    The node kube-scheduler actually bound a decided pod to, joined to the decision by UID
    (:mod:`.outcomes`): whether the extender's choice was honoured.
``ended``
    A decided pod's end: phase ``Succeeded`` or ``Failed``, or its deletion.
``energy``
    Energy attributed to a pod after the fact (the demo and the harness, on the measured
    curve).

The types are ``msgspec.Struct`` s: typed, checked when decoded, and encoded by msgspec's C
encoder (a placement record of eight candidates in a few µs, several times faster than
``json.dumps`` of the same dict: ``benchmarks/record_writer.py``). Times are epoch seconds
(``*_at_s``), a missing or unknown value is ``null`` (``None``), never 0; NaN encodes as
``null``. Readers ignore fields they do not know, so a later minor change only adds fields;
:data:`SCHEMA_VERSION` changes when a field changes meaning.
"""

from __future__ import annotations

import datetime as dt
from typing import Final, Literal

import msgspec

SCHEMA_VERSION: Final = 1
"""Version of the record format; every line carries it as ``version``."""

Mode = Literal["shadow", "active"]
"""The extender's (and the power manager's) mode: ``shadow`` decides and records only."""

METHODS: Final = (
    "short_lists",
    "rank_one",
    "linear_sum_assignment",
    "matching",
    "relaxation",
    "auction",
)
"""The names of ``eams.scheduler.auction.Method`` (a test keeps them equal)."""
BEST_BID: Final = "best_bid"
"""Method of a batch of one pod cleared without the engine: its best bid (exact)."""

GATE_REASONS: Final = (
    "asleep",
    "headroom_floor",
    "not_valued",
    "filter",
    "no_fit",
    "capped",
    "no_bid",
)
"""Why a node was not an option for a pod, in the order they are tested (the first applies):

``asleep``: the power manager has the node asleep. ``headroom_floor``: the extender's floor
keeps it off (its /filter removes it, a ``NoSchedule`` taint). ``not_valued``: no calibration
or no allocatable CPU, so the market cannot price it. ``filter``: kube-scheduler's filters did
not pass it (not in the pod's candidate list). ``no_fit``: the pod's CPU, memory or pod count
does not fit its free allocatable. ``capped``: known headroom ≤ 0, at or over its power cap
(study §5.2: the bid is 0). ``no_bid``: any other bid of 0 or not finite."""

CertificateKind = Literal["j_epsilon", "gap_bound", "exact"]


class PodRef(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A pod: ``namespace``, ``name`` and ``metadata.uid`` (``None`` when not known)."""

    namespace: str
    name: str
    uid: str | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


class Candidate(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One node the pod could go to, as the clearing saw it.

    Attributes
    ----------
    node : str
    bid : float or None
        v_jn, the pod's bid value for the node (core-seconds per joule, π-weighted; study §5.2).
    price : float or None
        The node's clearing price (bid-value units per slot).
    headroom : float or None
        Power headroom h = 1 − P/P_cap the bid used (telemetry minus reservations).
    age_s : float or None
        Age of the node's newest telemetry sample, s.
    gate : float or None
        σ(k(ĥ − h0)), the share of the bid the headroom gate left (study §5.2), in [0, 1).
    score : int or None
        The 0–10 score answered to kube-scheduler (0 for every node in shadow mode).
    """

    node: str
    bid: float | None
    price: float | None
    headroom: float | None
    age_s: float | None
    gate: float | None = None
    score: int | None = None


class Gated(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A node that was not an option for the pod, with the reason (:data:`GATE_REASONS`) and,
    where it has one, the number behind it (headroom for ``headroom_floor`` and ``capped``)."""

    node: str
    reason: str
    headroom: float | None = None
    age_s: float | None = None


class Certificate(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How far the clearing can be from the optimum, in bid-value units.

    ``kind="j_epsilon"``: a converged ε-auction of single-slot pods, within J·ε (``bound``) of
    the optimum (Bertsekas' ε-complementary slackness); ``"gap_bound"``: the certified
    optimum − value from the LP dual of the prices (multi-slot pods or a fallback);
    ``"exact"``: exact (a batch of one; ``bound`` 0). ``value`` is Σ of the assigned bids.
    """

    kind: CertificateKind
    bound: float
    value: float | None = None
    epsilon: float | None = None


class Placement(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="kind", tag="placement"
):
    """One pod's placement decision (see the module docstring and README.md)."""

    at_s: float
    mode: Mode
    clearing_id: str
    batch_pods: int
    pod: PodRef
    cleared_node: str | None
    price: float | None
    bid: float | None
    method: str
    fell_back: bool
    certificate: Certificate
    candidates: list[Candidate]
    candidates_total: int
    gated_counts: dict[str, int]
    gated: list[Gated]
    stale_after_s: float | None = None
    version: int = SCHEMA_VERSION


class Power(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="kind", tag="power"):
    """One power-manager decision about a node.

    Attributes
    ----------
    at_s : float
    mode : {"shadow", "active"}
    node : str
    from_state, to_state : str
        Power states (the power-state actions' ``running``, ``suspended``, ``soft_off``,
        ``off``); ``from_state`` ``None`` when not known.
    reason : str
        A short code (``idle_past_break_even``, ``pods_pending``, ``failed_wake``, …).
    detail : str
        The reason in words, for ``eams explain``.
    numbers : dict of str to float or None
        The figures the decision rests on, units in the keys (``idle_s``, ``break_even_s``,
        ``wake_energy_j``, ``reserve_cores``).
    action : str or None
        How it is carried out (``wol``, ``ssh``, ``outlet``); ``None`` in shadow mode.
    result : str or None
        ``ok``, ``failed``, ``refused``, ``dry_run``; ``None`` when not (yet) acted on.
    """

    at_s: float
    mode: Mode
    node: str
    from_state: str | None
    to_state: str
    reason: str
    detail: str = ""
    numbers: dict[str, float | None] = {}
    action: str | None = None
    result: str | None = None
    version: int = SCHEMA_VERSION


class Bound(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="kind", tag="bound"):
    """Where kube-scheduler bound a decided pod, joined to its latest decision.

    ``honoured`` is ``bound_node == cleared_node``; ``None`` when there was no choice to
    honour: the decision cleared the pod nowhere, or kube-scheduler bound it without asking the
    extender to score it after that decision (``scored`` false: one node alone passed its
    filters, so it skips scoring, or it bound the pod before the pod's batch cleared).
    ``scored`` is ``None`` when the writer does not know (a caller without the extender's
    answers). ``bound_at_s`` is the ``PodScheduled`` condition's ``lastTransitionTime``
    (``None`` when the pod does not carry it).
    """

    at_s: float
    pod: PodRef
    bound_node: str
    cleared_node: str | None
    honoured: bool | None
    mode: Mode
    clearing_id: str
    bound_at_s: float | None = None
    scored: bool | None = None
    version: int = SCHEMA_VERSION


class Ended(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="kind", tag="ended"):
    """A decided pod's end: ``phase`` ``Succeeded``, ``Failed``, or the phase it had when it
    was deleted (``deleted`` true). ``runtime_s`` runs from ``status.startTime`` to the last
    container's ``finishedAt`` (or, without it, to when the end was observed)."""

    at_s: float
    pod: PodRef
    phase: str | None
    deleted: bool
    node: str | None
    started_at_s: float | None
    ended_at_s: float
    runtime_s: float | None
    version: int = SCHEMA_VERSION


class Energy(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="kind", tag="energy"):
    """Energy attributed to a pod after it ran, Wh, and how: ``source`` ``metered`` (from the
    node's wall power) or ``modelled`` (a calibrated curve, or a sample the meter did not
    give); ``method`` names the attribution (``utilisation_share``: the node's measured power
    over the pod's run times the pod's share of the node's utilisation; ``calibrated_line``:
    the pod's marginal energy on the calibrated line; ``None`` when not said)."""

    at_s: float
    pod: PodRef
    node: str
    energy_wh: float
    source: str
    started_at_s: float | None = None
    ended_at_s: float | None = None
    method: str | None = None
    version: int = SCHEMA_VERSION


class Wake(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="kind", tag="wake"):
    """The market cleared a pending pod onto an asleep node: the placement and the wake it asks
    for, in one line (issue 34; ``eams.scheduler.extender.wakes``).

    Attributes
    ----------
    at_s : float
    mode : {"shadow", "active"}
    pod : PodRef
    node : str
        The asleep node the pod was cleared onto (and waits for).
    event : {"asked", "failed", "withdrawn"}
        ``asked``: the pod is held and the power manager asked to wake ``node``; ``failed``:
        the wake did not come (the node turned suspect, or 2× its wake time passed), the pod is
        cleared again among the other nodes; ``withdrawn``: while it waited an awake node became
        the better price.
    wake_bid : float or None
        The pod's bid on ``node``, wake energy and wait priced in (``bids.wake_values``),
        core-seconds per joule.
    awake_bid : float or None
        Its best bid on an awake candidate (the same model, headroom gate included); 0 when
        none could take it.
    wait_s : float or None
        The wait the bid priced, s.
    wake_energy_j : float or None
        The node's measured one-off wake energy E_wake, J.
    """

    at_s: float
    mode: Mode
    pod: PodRef
    node: str
    event: str
    wake_bid: float | None = None
    awake_bid: float | None = None
    wait_s: float | None = None
    wake_energy_j: float | None = None
    version: int = SCHEMA_VERSION


Record = Placement | Power | Bound | Ended | Energy | Wake
"""Any line of the record."""
RECORD_TYPES: Final = (Placement, Power, Bound, Ended, Energy, Wake)
KINDS: Final = ("placement", "power", "bound", "ended", "energy", "wake")

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Record] = msgspec.json.Decoder(Record)  # type: ignore[arg-type]


def encode_lines(records: list[Record]) -> bytes:
    """Records as JSON lines, each ending in ``\\n`` (one C call for the whole batch)."""
    return _encoder.encode_lines(records)


def encode(record: Record) -> bytes:
    """One record as JSON, without the newline."""
    return _encoder.encode(record)


def decode(line: bytes | str) -> Record:
    """One JSON line as its record.

    Raises
    ------
    msgspec.DecodeError
        Not JSON, or a field of the wrong type or missing (``msgspec.ValidationError``, a
        subclass, names the field's path, e.g. ``$.candidates[0].bid``).
    """
    return _decoder.decode(line)


def to_builtins(record: Record) -> dict[str, object]:
    """A record as plain dicts and lists (what its JSON line holds)."""
    out: dict[str, object] = msgspec.to_builtins(record)
    return out


def rfc3339(at_s: float) -> str:
    """Epoch seconds as RFC 3339 UTC with microseconds (``2025-01-02T03:04:05.678901Z``)."""
    return dt.datetime.fromtimestamp(at_s, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
