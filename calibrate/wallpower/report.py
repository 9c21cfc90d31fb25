"""The check's outputs: a self-contained HTML report (PNG plots inlined) and a JSON summary.

The page says what was measured (:class:`About`: setup and workload as the caller states them;
the run windows in UTC, the telemetry, the date and the EAMS version), then the VT-5 verdict
(:func:`shown_verdict`: a check whose uncertainty is wider than its tolerance is NOT RESOLVED,
never a pass), then the evidence. Every ± on the page is 2σ (:data:`plots.K_SIGMA`); the JSON
summary keeps standard uncertainties (1σ, the ``sd_*`` keys).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from eams import __version__
from eams.calibrate.wallpower import plots
from eams.calibrate.wallpower.check import RunResult, SavingCheck, unflagged_model_errors
from eams.calibrate.wallpower.counter import COUNTER_MIN_STEPS
from eams.calibrate.wallpower.energy import GAP_FACTOR
from eams.calibrate.wallpower.errors import WallPowerError
from eams.calibrate.wallpower.plots import K_SIGMA, metered_sd_wh, utc
from eams.calibrate.wallpower.spec import format_time_ns

HTML_NAME = "wallpower_report.html"
JSON_NAME = "wallpower_summary.json"
NOT_RESOLVED = "NOT RESOLVED"


@dataclass(frozen=True, slots=True)
class About:
    """What was measured, as the caller knows it (the telemetry cannot say).

    Attributes
    ----------
    setup : str or None
        The meter and the nodes, e.g. that they are simulated (the demo) or which PDU and
        machines; ``None``: the report says the caller did not state it.
    workload : str or None
        What ran, e.g. the trace file, the number of pods and the offered load ρ.
    """

    setup: str | None = None
    workload: str | None = None


def shown_verdict(result: SavingCheck) -> str:
    """The verdict as shown to a reader: ``PASS``, ``FAIL``, or :data:`NOT_RESOLVED` when the
    difference's 2σ is wider than the tolerance (the measurement cannot tell a pass from a
    fail, whatever the point estimate says)."""
    return result.verdict if result.resolvable else NOT_RESOLVED


_ENV = Environment(
    loader=PackageLoader("eams.calibrate.wallpower", "templates"),
    autoescape=select_autoescape(["html.j2"]),
    undefined=StrictUndefined,
    trim_blocks=True,
)
"""The report's templates (package data); every value is HTML-escaped, attributes included."""


def _per_node_rows(run: RunResult, accuracy_pct: float) -> list[list[str]]:
    rows = []
    for name, n in run.nodes.items():
        rmse = "—" if n.power_rmse_w is None else f"{n.power_rmse_w:.2f}"
        rows.append(
            [
                name,
                n.method,
                f"{n.metered_wh:.3f} ± {K_SIGMA * metered_sd_wh(n, accuracy_pct):.3f}",
                f"{n.modelled_wh:.3f}",
                f"{n.model_error_pct:+.2f}",
                rmse,
                f"{len(n.gaps)} ({sum(g.length_s for g in n.gaps):.1f} s)",
                str(len(n.counter_events)),
            ]
        )
    return rows


def _data_uri(png: bytes) -> str:
    return f"data:image/png;base64,{base64.b64encode(png).decode()}"


def _sd_pts(parts: dict[str, float]) -> float:
    return math.sqrt(sum(v**2 for v in parts.values())) * 100


def _measured(result: SavingCheck, about: About) -> list[tuple[str, str]]:
    """The "What was measured" table's rows (label, text)."""
    setup = about.setup or (
        "not stated by whoever ran the check: the meter and the nodes are those of the "
        "telemetry below"
    )
    rows = [("setup", setup)]
    if about.workload:
        rows.append(("workload", about.workload))
    for run in (result.a, result.b):
        work = "" if run.work_core_s is None else f", {run.work_core_s:.1f} core-s of work"
        rows.append(
            (
                f"run {run.label}",
                f"{utc(run.start_ns)} to {utc(run.end_ns)} ({run.duration_s:.1f} s{work}); "
                f"telemetry {run.spec}",
            )
        )
    rows.append(("meter accuracy", f"±{result.accuracy_pct:g} % of reading (stated)"))
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows.append(("report", f"made {made} by EAMS {__version__}"))
    return rows


def _verdict_text(r: SavingCheck) -> str:
    within = "within" if r.passed else "outside"
    band = f"the ±{r.tolerance_pts:g}-point band VT-5 allows"
    if r.resolvable:
        return f"The difference is {within} {band}."
    half = K_SIGMA * r.sd_difference_pts
    return (
        f"The difference is {within} {band}, but its uncertainty (±{half:.2f} points) is wider "
        "than the band: this measurement cannot tell whether VT-5 holds."
    )


def render_html(
    result: SavingCheck,
    title: str = "VT-5 wall-power check",
    note: str | None = None,
    about: About | None = None,
    answer: str | None = None,
    links: Sequence[tuple[str, str]] = (),
    overview: Sequence[Sequence[str]] = (),
    alerts: Sequence[str] = (),
    links_intro: str | None = None,
    marks: Mapping[str, Sequence[plots.PowerMark]] | None = None,
    see_also: Sequence[tuple[str, str]] = (),
) -> str:
    """The report as one HTML document with its figures inlined (base64 PNG), rendered from
    ``templates/report.html.j2`` with every value escaped.

    Parameters
    ----------
    result : SavingCheck
    title : str
    note : str, optional
        A sentence shown under the runs table (e.g. how the caller's time relates to the
        runs' time).
    about : About, optional
        What was measured, as the caller knows it.
    answer : str, optional
        The report's first sentence, shown above everything else (``<p id=answer>``): what was
        saved at the wall, in words. Left out when not given.
    links : sequence of (str, str)
        (text, href) of decisions worth reading (the demo's three placements that saved the
        most energy), listed under the answer; none by default.
    overview : sequence of sequence of str
        A table of every run the caller compared (header row first; the demo's three runs,
        ``default+pm`` included), shown under the answer with ``note`` beneath it (as under
        the two runs' table); none by default.
    links_intro : str, optional
        A paragraph above ``links`` (``<p id=decisions-intro>``): what they are a sample of.
    alerts : sequence of str
        What went wrong in the runs as the caller saw it (the demo's failed power
        transitions), shown under ``overview`` (``<div id=alerts>``); none by default.
    marks : mapping of str to sequence of PowerMark, optional
        By run label: where a node was put to sleep or woken, marked on the power-over-time
        plot (:func:`plots.power_over_time`); none by default.
    see_also : sequence of (str, str)
        (text, href) of other reports of the same study (the demo's other offered loads),
        listed under ``alerts`` (``<ul id=see-also>``); none by default.

    A PASS while run B used more energy than run A is never green: the badge is orange and
    says so (the model agreeing with a loss is not a success).
    """
    r = result
    a, b = r.a, r.b
    shown = shown_verdict(r)
    norm = {"work": "energy per unit of work", "time": "mean power", "none": "total energy"}
    loss = r.passed and r.saving_metered < 0
    head, *body = overview or ([],)
    context = {
        "title": title,
        "a_label": a.label,
        "b_label": b.label,
        "answer": answer,
        "links": list(links),
        "links_intro": links_intro,
        "overview_head": list(head),
        "overview_body": [list(row) for row in body],
        "note": note,
        "alerts": list(alerts),
        "see_also": list(see_also),
        "measured": _measured(r, about or About()),
        "badge": f"verdict {shown.replace(' ', '-')}" + (" LOSS" if loss else ""),
        "shown": shown,
        "loss": loss,
        "saving_metered": f"{r.saving_metered * 100:.2f}",
        "u_metered": f"{K_SIGMA * _sd_pts(r.sd_metered):.2f}",
        "saving_modelled": f"{r.saving_modelled * 100:.2f}",
        "u_modelled": f"{K_SIGMA * _sd_pts(r.sd_modelled):.2f}",
        "difference": f"{r.difference_pts:+.2f}",
        "u_difference": f"{K_SIGMA * r.sd_difference_pts:.2f}",
        "verdict_text": _verdict_text(r),
        "norm": norm[r.normalised_by],
        "unit": r.unit,
        "runs": [
            [
                run.label,
                f"{run.duration_s:.1f}",
                "—" if run.work_core_s is None else f"{run.work_core_s:.1f}",
                f"{run.metered_wh:.3f}",
                f"{run.modelled_wh:.3f}",
                f"{run.metered_normalised:.4g}",
                f"{run.modelled_normalised:.4g}",
            ]
            for run in (a, b)
        ],
        "sd_rows": [
            (f"{kind}: {name.replace('_', ' ')}", f"{K_SIGMA * value * 100:.2f}")
            for kind, parts in (("metered", r.sd_metered), ("modelled", r.sd_modelled))
            for name, value in parts.items()
        ],
        "warnings": list(r.warnings),
        # one value per node over both runs, so one table, not a column repeated in each run's
        "shares": [(name, f"{points:+.2f}") for name, points in r.disagreement_pts.items()],
        "per_node": [
            (run.label, _per_node_rows(run, r.accuracy_pct), unflagged_model_errors(run))
            for run in (a, b)
        ],
        "img_savings": _data_uri(plots.savings(r)),
        "img_energy": _data_uri(plots.energy_per_node(r)),
        "img_power": _data_uri(plots.power_over_time(r, marks)),
        "counter_min_steps": COUNTER_MIN_STEPS,
        "gap_factor": f"{GAP_FACTOR:g}",
        "accuracy": f"{r.accuracy_pct:g}",
        "tolerance": f"{r.tolerance_pts:g}",
        "not_resolved": NOT_RESOLVED,
    }
    return _ENV.get_template("report.html.j2").render(context)


def render_text_page(
    title: str, text: str, intro: str | None = None, links: Sequence[tuple[str, str]] = ()
) -> str:
    """A small HTML page of preformatted ``text`` (``<pre id=text>``) under ``title``, with an
    ``intro`` paragraph above and (label, href) ``links`` below: how the demo's report shows a
    decision as ``eams explain`` prints it. Every value is escaped."""
    context = {"title": title, "text": text, "intro": intro, "links": list(links)}
    return _ENV.get_template("text_page.html.j2").render(context)


def summary_json(result: SavingCheck, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON summary: verdict, savings, uncertainty components and per-node figures, then
    the caller's ``extra`` keys (the demo's ``power_transitions``, ρ, the other runs).

    Savings and their standard uncertainties (1σ) are fractions, the difference is in points,
    energies in Wh (``metered_normalised`` in the result's ``unit``), run windows ISO-8601
    UTC; the keys are those written to ``wallpower_summary.json``. ``verdict`` is the check's
    (PASS/FAIL), ``shown_verdict`` what the report shows (NOT RESOLVED when not resolvable).
    """

    def run_json(run: RunResult) -> dict[str, Any]:
        return {
            "label": run.label,
            "spec": run.spec,
            "start_utc": format_time_ns(run.start_ns, "milliseconds"),
            "end_utc": format_time_ns(run.end_ns, "milliseconds"),
            "duration_s": run.duration_s,
            "work_core_s": run.work_core_s,
            "metered_wh": run.metered_wh,
            "modelled_wh": run.modelled_wh,
            "metered_normalised": run.metered_normalised,
            "modelled_normalised": run.modelled_normalised,
            "nodes": {
                name: {
                    "method": n.method,
                    "metered_wh": n.metered_wh,
                    "metered_sampling_sd_wh": n.metered_sampling_sd_wh,
                    "metered_reading_sd_wh": n.metered_reading_sd_wh,
                    "modelled_wh": n.modelled_wh,
                    "model_error_pct": n.model_error_pct,
                    "power_rmse_w": n.power_rmse_w,
                    "gaps_s": [[g.start_s, g.end_s] for g in n.gaps],
                    "counter_events": [
                        {
                            "kind": e.kind,
                            "at_s": e.at_s,
                            "before_wh": e.before_wh,
                            "after_wh": e.after_wh,
                            "bridged_wh": e.bridged_wh,
                            "how": e.how,
                            "readings": e.readings,
                            "implied_w": e.implied_w,
                            "ceiling_w": e.ceiling_w,
                        }
                        for e in n.counter_events
                    ],
                    "counter_note": n.counter_note,
                    "modelled_samples": n.modelled_samples,
                }
                for name, n in run.nodes.items()
            },
        }

    return {
        "verdict": result.verdict,
        "shown_verdict": shown_verdict(result),
        "passed": result.passed,
        "resolvable": result.resolvable,
        "tolerance_pts": result.tolerance_pts,
        "normalised_by": result.normalised_by,
        "unit": result.unit,
        "saving_metered": result.saving_metered,
        "saving_modelled": result.saving_modelled,
        "difference_pts": result.difference_pts,
        "sd_difference_pts": result.sd_difference_pts,
        "sd_metered": result.sd_metered,
        "sd_modelled": result.sd_modelled,
        "disagreement_pts": result.disagreement_pts,
        "accuracy_pct": result.accuracy_pct,
        "warnings": list(result.warnings),
        "runs": {"a": run_json(result.a), "b": run_json(result.b)},
        **(extra or {}),
    }


def write_report(
    result: SavingCheck,
    out_dir: Path,
    title: str = "VT-5 wall-power check",
    note: str | None = None,
    about: About | None = None,
    answer: str | None = None,
    links: Sequence[tuple[str, str]] = (),
    extra: Mapping[str, Any] | None = None,
    overview: Sequence[Sequence[str]] = (),
    alerts: Sequence[str] = (),
    links_intro: str | None = None,
    marks: Mapping[str, Sequence[plots.PowerMark]] | None = None,
    see_also: Sequence[tuple[str, str]] = (),
) -> tuple[Path, Path]:
    """Write ``wallpower_report.html`` and ``wallpower_summary.json`` into ``out_dir``.

    Parameters
    ----------
    result : SavingCheck
    out_dir : Path
        Created as needed.
    title, note, about, answer, links, overview, alerts, links_intro, marks, see_also
        See :func:`render_html`.
    extra : mapping, optional
        More keys for the JSON summary (:func:`summary_json`).

    Returns
    -------
    (Path, Path)
        The HTML and the JSON file.

    Raises
    ------
    WallPowerError
        The directory cannot be created or written (naming it).
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        html_path, json_path = out_dir / HTML_NAME, out_dir / JSON_NAME
        html_path.write_text(
            render_html(
                result,
                title,
                note,
                about,
                answer,
                links,
                overview,
                alerts,
                links_intro,
                marks,
                see_also,
            )
        )
        json_path.write_text(json.dumps(summary_json(result, extra), indent=2) + "\n")
    except OSError as exc:
        raise WallPowerError(
            f"cannot write the report into {out_dir}: {exc.strerror or exc}"
        ) from exc
    return html_path, json_path
