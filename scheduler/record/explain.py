"""Why a pod landed where it did, or what happened to a node: built from records, then printed.

:func:`explain_pod` and :func:`explain_node` are pure (records in, a JSON-ready dict out);
:func:`render_pod` and :func:`render_node` turn that dict into the text ``eams explain`` prints.
The dict is what ``eams explain --json`` prints: the summary plus the records it rests on, in
the record's own format.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from eams.scheduler.record.errors import NoDecision
from eams.scheduler.record.schema import (
    Bound,
    Ended,
    Energy,
    Placement,
    Power,
    Record,
    Wake,
    rfc3339,
    to_builtins,
)

GATE_WORDS = {
    "asleep": "asleep (power manager)",
    "headroom_floor": "under the headroom floor (extender /filter)",
    "not_valued": "not valued (no calibration or allocatable CPU)",
    "filter": "removed by kube-scheduler's filters",
    "no_fit": "pod does not fit (CPU, memory or pod count)",
    "capped": "at or over its power cap (headroom ≤ 0)",
    "no_bid": "no bid",
}


def explain_pod(records: Sequence[Record], target: str, top: int = 5) -> dict[str, Any]:
    """The explanation of one pod from the records about it.

    When several pods match ``target`` (a bare name in two namespaces, a pod created again under
    its name), the one decided last is explained and the others are listed in ``other_pods``.

    Parameters
    ----------
    records : sequence of Record
        Records about the pod (``Query(pod=target)``), any order.
    target : str
        What was asked (for the messages).
    top : int
        Candidates shown, best bids first (the cleared node always).

    Raises
    ------
    NoDecision
        No placement decision among ``records``.
    """
    placements = sorted((r for r in records if isinstance(r, Placement)), key=_at_s)
    wakes = sorted((r for r in records if isinstance(r, Wake)), key=_at_s)
    if not placements and not wakes:
        raise NoDecision(f"no placement decision on record for pod {target!r}")
    latest: Placement | Wake = placements[-1] if placements else wakes[-1]
    same = _pod_id(latest)
    mine = [r for r in records if _pod_id(r) == same]
    decided: list[Placement | Wake] = [*placements, *wakes]
    others = sorted({_pod_id(p) for p in decided} - {same})
    decisions = [p for p in placements if _pod_id(p) == same]
    bound = max((r for r in mine if isinstance(r, Bound)), key=_at_s, default=None)
    decision = next(
        (p for p in reversed(decisions) if bound and p.clearing_id == bound.clearing_id),
        decisions[-1] if decisions else None,
    )
    ended = max((r for r in mine if isinstance(r, Ended)), key=_at_s, default=None)
    energy = [r for r in mine if isinstance(r, Energy)]
    return {
        "kind": "pod",
        "target": target,
        "pod": to_builtins(latest)["pod"],
        "decisions": len(decisions),
        "decision": None if decision is None else to_builtins(decision),
        "wakes": [to_builtins(w) for w in wakes if _pod_id(w) == same],
        "top": top,
        "bound": to_builtins(bound) if bound else None,
        "honoured": bound.honoured if bound else None,
        "ended": to_builtins(ended) if ended else None,
        "energy_wh": sum(e.energy_wh for e in energy) if energy else None,
        "energy": [to_builtins(e) for e in energy],
        "other_pods": [f"{key} (uid {uid})" for key, uid in others],
    }


def explain_node(records: Sequence[Record], node: str, recent: int = 10) -> dict[str, Any]:
    """The explanation of one node: its power decisions and its placements.

    Raises
    ------
    NoDecision
        Nothing on record names the node.
    """
    if not records:
        raise NoDecision(f"nothing on record for node {node!r}")
    ordered = sorted(records, key=_at_s)
    power = [r for r in ordered if isinstance(r, Power)]
    placements = [r for r in ordered if isinstance(r, Placement)]
    cleared = [p for p in placements if p.cleared_node == node]
    lost = [p for p in placements if p.cleared_node != node and _is_candidate(p, node)]
    gated = Counter(g.reason for p in placements for g in p.gated if g.node == node)
    bound = [r for r in ordered if isinstance(r, Bound) and r.bound_node == node]
    honoured = Counter("yes" if r.honoured else "no" for r in bound if r.honoured is not None)
    elsewhere = [
        r for r in ordered if isinstance(r, Bound) and r.cleared_node == node and not r.honoured
    ]
    energy = [r for r in ordered if isinstance(r, Energy) and r.node == node]
    return {
        "kind": "node",
        "target": node,
        "power": [to_builtins(r) for r in power[-recent:]],
        "power_decisions": len(power),
        "cleared_here": len(cleared),
        "cleared_recent": [_placement_line(p) for p in cleared[-recent:]],
        "candidate_not_cleared": len(lost),
        "gated": dict(gated),
        "bound_here": len(bound),
        "bound_honoured": honoured.get("yes", 0),
        "bound_overridden": honoured.get("no", 0),
        "cleared_here_bound_elsewhere": [
            {"pod": f"{r.pod.namespace}/{r.pod.name}", "bound_node": r.bound_node}
            for r in elsewhere[-recent:]
        ],
        "energy_wh": sum(e.energy_wh for e in energy) if energy else None,
    }


# ---- text -------------------------------------------------------------------------------------


def render_pod(explanation: dict[str, Any]) -> str:
    """The text of a pod's explanation (what ``eams explain POD`` prints)."""
    d = explanation["decision"]
    pod = explanation["pod"]
    lines = [
        f"pod {pod['namespace']}/{pod['name']}" + (f" (uid {pod['uid']})" if pod["uid"] else "")
    ]
    lines += [_wake_line(w) for w in explanation.get("wakes", [])]
    if d is None:  # held for a market wake, then bound to its one node: no clearing asked
        lines += _after_lines(explanation)
        return "\n".join(lines)
    lines.append(
        f"decided   {rfc3339(d['at_s'])}, {d['mode']} mode, clearing {d['clearing_id']} "
        f"({d['batch_pods']} pod{'s' if d['batch_pods'] != 1 else ''}), method {d['method']}"
        + (" (round cap hit: greedy fallback)" if d["fell_back"] else "")
        + (
            f"; {explanation['decisions']} decisions on record"
            if explanation["decisions"] > 1
            else ""
        )
    )
    if d["cleared_node"] is None:
        lines.append("cleared   nowhere: no node could take the pod in this clearing")
    else:
        lines.append(
            f"cleared   {d['cleared_node']} at price {_f(d['price'])} (bid {_f(d['bid'])})"
        )
    lines.append(f"certificate {certificate_text(d['certificate'], d['batch_pods'])}")
    lines += _candidates_table(d, explanation["top"])
    lines += _gated_lines(d)
    lines += _after_lines(explanation)
    if explanation["other_pods"]:
        lines.append("also matching: " + ", ".join(explanation["other_pods"]))
    return "\n".join(lines)


def render_node(explanation: dict[str, Any]) -> str:
    """The text of a node's explanation (what ``eams explain NODE`` prints)."""
    e = explanation
    lines = [f"node {e['target']}"]
    lines.append(
        f"power decisions: {e['power_decisions']}" + (" (latest last)" if e["power"] else "")
    )
    for p in e["power"]:
        numbers = ", ".join(f"{k}={_f(v)}" for k, v in p["numbers"].items())
        result = f" → {p['result']}" if p["result"] else ""
        lines.append(
            f"  {rfc3339(p['at_s'])} {p['mode']}: {p['from_state'] or '?'} → {p['to_state']} "
            f"({p['reason']}{': ' + p['detail'] if p['detail'] else ''})"
            + (f" [{numbers}]" if numbers else "")
            + result
        )
    lines.append(
        f"placements: cleared here {e['cleared_here']}, a candidate but cleared elsewhere "
        f"{e['candidate_not_cleared']}"
    )
    lines += [f"  {line}" for line in e["cleared_recent"]]
    if e["gated"]:
        lines.append(
            "gated for: "
            + "; ".join(f"{GATE_WORDS.get(r, r)} ×{n}" for r, n in sorted(e["gated"].items()))
        )
    lines.append(
        f"bindings: {e['bound_here']} pods bound here ({e['bound_honoured']} as the extender "
        f"cleared them, {e['bound_overridden']} though it cleared them elsewhere)"
    )
    for moved in e["cleared_here_bound_elsewhere"]:
        lines.append(f"  {moved['pod']}: cleared here, bound to {moved['bound_node']}")
    if e["energy_wh"] is not None:
        lines.append(f"energy attributed to its pods: {_f(e['energy_wh'])} Wh")
    return "\n".join(lines)


def certificate_text(cert: dict[str, Any], batch_pods: int) -> str:
    """The certificate in words (study §5.3; the auction README's certificates)."""
    value = f" of the optimum (value {_f(cert['value'])})" if cert.get("value") is not None else ""
    if cert["kind"] == "exact":
        return "exact: one pod in the batch, its best bid"
    if cert["kind"] == "gap_bound":
        return f"within {_f(cert['bound'])}{value or ' of the optimum'}: certified gap bound"
    eps = cert.get("epsilon")
    how = f"J·ε = {batch_pods} × {_f(eps)} = {_f(cert['bound'])}" if eps is not None else "J·ε"
    return f"within {how}{value or ' of the optimum'}"


def _candidates_table(d: dict[str, Any], top: int) -> list[str]:
    candidates = d["candidates"][: max(top, 1)]
    if not candidates:
        return ["candidates: none open"]
    stale = d.get("stale_after_s")
    head = ["node", "bid", "price", "headroom", "age_s", "gate", "score", ""]
    rows = []
    gated = {g["node"]: g["reason"] for g in d["gated"]}
    for c in candidates:
        notes = []
        if c["node"] == d["cleared_node"]:
            notes.append(_cleared_note(c["node"], gated))
        if stale is not None and c["age_s"] is not None and c["age_s"] > stale:
            notes.append(f"stale (> {_f(stale)} s: bid discounted)")
        if c["age_s"] is None:
            notes.append("no telemetry")
        rows.append(
            [
                c["node"],
                *(_f(c[k]) for k in ("bid", "price", "headroom", "age_s", "gate")),
                "-" if c["score"] is None else str(c["score"]),
                " ".join(notes),
            ]
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    shown = f"best {len(candidates)} of {d['candidates_total']} nodes by bid"
    out = [f"candidates ({shown}):"]
    for row in [head, *rows]:
        out.append(
            "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        )
    return out


def _gated_lines(d: dict[str, Any]) -> list[str]:
    counts = d["gated_counts"]
    if not counts:
        return ["gated: none"]
    out = [f"gated: {sum(counts.values())} node{'s' if sum(counts.values()) != 1 else ''}"]
    by_reason: dict[str, list[str]] = {}
    for g in d["gated"]:
        notes = (
            [f"headroom {_f(g['headroom'])}"] if g["reason"] in ("headroom_floor", "capped") else []
        )
        if g["node"] == d["cleared_node"]:  # the bid's soft gate let it bid: say so
            notes.append("yet cleared: its bid's gate is soft")
        detail = f" ({'; '.join(notes)})" if notes else ""
        by_reason.setdefault(g["reason"], []).append(g["node"] + detail)
    for reason, n in counts.items():
        named = by_reason.get(reason, [])
        more = f", … {n - len(named)} more" if n > len(named) else ""
        out.append(f"  {GATE_WORDS.get(reason, reason)}: {n}: {', '.join(named)}{more}")
    return out


def _cleared_note(node: str, gated: dict[str, str]) -> str:
    """The cleared node's mark; where the same snapshot also gated it (its bid's gate
    σ(k(ĥ − h0)) is soft, so a node just under the headroom floor still bids), both said."""
    if node not in gated:
        return "← cleared"
    return f"← cleared, though {GATE_WORDS.get(gated[node], gated[node])} (see gated)"


def _after_lines(e: dict[str, Any]) -> list[str]:
    bound, ended = e["bound"], e["ended"]
    if bound is None:
        out = ["after     no binding on record"]
    else:
        when = f" at {rfc3339(bound['bound_at_s'])}" if bound["bound_at_s"] is not None else ""
        if bound.get("scored") is False:
            verdict = (
                "(not scored: kube-scheduler bound it without asking the extender; "
                f"it had cleared {bound['cleared_node']})"
            )
        elif bound["honoured"] is None:
            verdict = "(the clearing had no node for it)"
        elif bound["honoured"]:
            verdict = "(honoured: the cleared node)"
        else:
            verdict = f"(NOT honoured: the extender cleared {bound['cleared_node']})"
        out = [f"after     bound to {bound['bound_node']} by kube-scheduler{when} {verdict}"]
    if ended is not None:
        run = f" after {_f(ended['runtime_s'])} s" if ended["runtime_s"] is not None else ""
        what = f"deleted (phase {ended['phase']})" if ended["deleted"] else str(ended["phase"])
        out.append(f"ended     {what} at {rfc3339(ended['ended_at_s'])}{run}")
    if e["energy_wh"] is not None:
        how = sorted({_attribution(x) for x in e["energy"]})
        out.append(f"energy    {_f(e['energy_wh'])} Wh attributed ({', '.join(how)})")
    return out


def _wake_line(w: dict[str, Any]) -> str:
    """One market-wake event in words (the ``wake`` record, ``eams.scheduler.extender.wakes``)."""
    what = {
        "asked": f"held for {w['node']} (asleep); its wake asked",
        "failed": f"the wake of {w['node']} failed; cleared again",
        "withdrawn": f"no longer held for {w['node']}: an awake node became the better price",
    }.get(w["event"], f"{w['event']} {w['node']}")
    figures = [
        f"{label} {_f(w[key])}"
        for key, label in (
            ("wake_bid", "bid"),
            ("awake_bid", "best awake bid"),
            ("wait_s", "wait_s"),
        )
        if w.get(key) is not None
    ]
    return f"wake      {rfc3339(w['at_s'])} {w['mode']}: {what}" + (
        f" ({', '.join(figures)})" if figures else ""
    )


def _attribution(energy: dict[str, Any]) -> str:
    """``metered by utilisation_share``: an energy line's source and, when it says, its method."""
    method = energy.get("method")
    return energy["source"] if method is None else f"{energy['source']} by {method}"


def _placement_line(p: Placement) -> str:
    return (
        f"{rfc3339(p.at_s)} {p.mode}: {p.pod.namespace}/{p.pod.name} at price {_f(p.price)} "
        f"(bid {_f(p.bid)}, clearing {p.clearing_id})"
    )


def _is_candidate(p: Placement, node: str) -> bool:
    return any(c.node == node for c in p.candidates)


def _pod_id(record: Record) -> tuple[str, str | None]:
    pod = getattr(record, "pod", None)
    return (pod.key, pod.uid) if pod is not None else ("", None)


def _at_s(record: Record) -> float:
    return record.at_s


def _f(value: float | None) -> str:
    """A number for text: 4 significant digits, ``-`` for unknown."""
    return "-" if value is None else f"{value:.4g}"
