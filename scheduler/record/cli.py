"""``eams explain POD|NODE``: why a pod landed where it did, or what a node did, from the record.

Exit status 0 when explained; 2 for a bad invocation (neither or both of ``--record`` and
``--extender``, a record path that does not exist, a URL that is not http(s), a target that
names both a pod and a node); 1 when the world fails (nothing on record for the target, an
unreadable file, an extender that does not answer), as one ``eams: error:`` line.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from eams.scheduler.record.errors import NoDecision
from eams.scheduler.record.explain import explain_node, explain_pod, render_node, render_pod
from eams.scheduler.record.reader import Query, read_records
from eams.scheduler.record.remote import fetch_records
from eams.scheduler.record.schema import Placement, Record

RECORD_ENV = "EAMS_RECORD"


def _url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise click.BadParameter(f"{value!r}: give an http:// or https:// URL", ctx, param)
    return value


@click.command()
@click.argument("target", metavar="POD|NODE")
@click.option(
    "--record",
    "record_path",
    type=click.Path(exists=True, path_type=Path),
    envvar=RECORD_ENV,
    help="Record file, or the folder the writer writes (rotated files included); "
    f"default ${RECORD_ENV}.",
)
@click.option(
    "--extender",
    "extender_url",
    metavar="URL",
    callback=_url,
    help="Read the record from the extender at URL (its GET /decisions) instead of a file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
@click.option(
    "--top",
    type=click.IntRange(1, 100),
    default=5,
    show_default=True,
    help="Candidate nodes shown for a pod, best bids first (the cleared node always).",
)
@click.option(
    "--limit",
    type=click.IntRange(1, 1_000_000),
    default=10_000,
    show_default=True,
    help="Newest records read about the target.",
)
def explain(
    target: str,
    record_path: Path | None,
    extender_url: str | None,
    as_json: bool,
    top: int,
    limit: int,
) -> None:
    """Why a pod landed where it did, or what a node did, from the decision record.

    POD is NAMESPACE/NAME, a NAME (any namespace) or a UID, NODE a node name; prefix
    pod/ or node/ when a name could be either. For a pod: its clearing, the bids of the
    best nodes, what gated the others, the certificate, and what happened after (bound
    where, honoured or not, ended when, energy). For a node: its power decisions and its
    placements.
    """
    if (record_path is None) == (extender_url is None):
        raise click.UsageError(
            f"give one of --record FILE|DIR (or ${RECORD_ENV}) or --extender URL"
        )
    kind, name = _split(target)

    def read(query: Query) -> tuple[list[Record], list[str]]:
        if extender_url is not None:
            served = fetch_records(extender_url, query, limit=limit)
            notes = [f"{served.skipped} record lines skipped by the extender"] * bool(
                served.skipped
            )
            return served.records, notes
        assert record_path is not None
        result = read_records(record_path, query, limit=limit)
        notes = []
        if result.skipped:
            notes.append(
                f"{result.skipped} record lines skipped: " + "; ".join(result.skipped_examples)
            )
        return result.records, notes

    pod_records, notes = read(Query(pod=name)) if kind in ("pod", None) else ([], [])
    node_records, node_notes = read(Query(node=name)) if kind in ("node", None) else ([], [])
    is_pod = any(isinstance(r, Placement) for r in pod_records)
    if kind is None and is_pod and node_records:
        raise click.BadParameter(
            f"{name!r} names both a pod and a node: say pod/{name} or node/{name}",
            param_hint="POD|NODE",
        )
    where = str(record_path) if record_path is not None else extender_url
    if kind == "pod" and not is_pod:
        raise NoDecision(f"no placement decision on record for pod {name!r} in {where}")
    if is_pod:
        explanation = explain_pod(pod_records, name, top=top)
        text = render_pod
    elif node_records:
        explanation = explain_node(node_records, name)
        text = render_node
        notes = node_notes
    else:
        what = {"pod": "pod", "node": "node", None: "pod or node"}[kind]
        raise NoDecision(f"nothing on record for {what} {name!r} in {where}")
    if as_json:
        click.echo(json.dumps({**explanation, "notes": notes}, indent=2, ensure_ascii=False))
        return
    click.echo(text(explanation))
    for note in notes:
        click.echo(f"note: {note}", err=True)


def _split(target: str) -> tuple[str | None, str]:
    """``pod/…`` and ``node/…`` say which; anything with a ``/`` is a pod (NAMESPACE/NAME)."""
    for kind in ("pod", "node"):
        if target.startswith(kind + "/") and len(target) > len(kind) + 1:
            return kind, target[len(kind) + 1 :]
    return ("pod" if "/" in target else None), target
