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
from html import escape
from pathlib import Path
from typing import Any

from eams import __version__
from eams.calibrate.wallpower import plots
from eams.calibrate.wallpower.check import RunResult, SavingCheck
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


_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1120px;color:#222}
h1{font-size:24px;margin:0 0 4px} h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.verdict{display:inline-block;padding:6px 16px;border-radius:6px;color:#fff;font-weight:700;
 font-size:22px;margin:8px 0} .PASS{background:#2e7d32} .FAIL{background:#c62828}
.NOT-RESOLVED{background:#6d6d6d} .PASS.LOSS{background:#ef6c00}
.answer{font-size:18px;font-weight:600}
table{border-collapse:collapse;margin:6px 0 12px} td,th{border:1px solid #ccc;padding:4px 9px;
 text-align:right;white-space:nowrap} th{background:#f3f3f3} td.l,th.l{text-align:left}
td.l{white-space:normal}
code{font-size:12px;word-break:break-all}
.warn{background:#fff8e1;border-left:4px solid #f9a825;padding:6px 10px;margin:4px 0}
img{max-width:100%;border:1px solid #eee} .small{color:#555;font-size:13px}
"""


def _per_node_rows(run: RunResult, accuracy_pct: float) -> str:
    rows = []
    for name, n in run.nodes.items():
        rmse = "—" if n.power_rmse_w is None else f"{n.power_rmse_w:.2f}"
        rows.append(
            f"<tr><td class=l>{escape(name)}</td><td class=l>{n.method}</td>"
            f"<td>{n.metered_wh:.3f} ± {K_SIGMA * metered_sd_wh(n, accuracy_pct):.3f}</td>"
            f"<td>{n.modelled_wh:.3f}</td><td>{n.model_error_pct:+.2f}</td><td>{rmse}</td>"
            f"<td>{len(n.gaps)} ({sum(g.length_s for g in n.gaps):.1f} s)</td>"
            f"<td>{len(n.counter_events)}</td></tr>"
        )
    return "".join(rows)


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _sd_pts(parts: dict[str, float]) -> float:
    return math.sqrt(sum(v**2 for v in parts.values())) * 100


def _measured(result: SavingCheck, about: About) -> str:
    """The "What was measured" table."""
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
    body = "".join(
        f"<tr><th class=l>{escape(k)}</th><td class=l>{escape(v)}</td></tr>" for k, v in rows
    )
    return f"<table id=measured>{body}</table>"


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
) -> str:
    """The report as one HTML document with its figures inlined (base64 PNG).

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

    A PASS while run B used more energy than run A is never green: the badge is orange and
    says so (the model agreeing with a loss is not a success).
    """
    r = result
    a, b = r.a, r.b
    about = about or About()
    shown = shown_verdict(r)
    norm = {"work": "energy per unit of work", "time": "mean power", "none": "total energy"}
    runs_rows = "".join(
        f"<tr><td class=l>{escape(run.label)}</td><td>{run.duration_s:.1f}</td>"
        f"<td>{'—' if run.work_core_s is None else f'{run.work_core_s:.1f}'}</td>"
        f"<td>{run.metered_wh:.3f}</td><td>{run.modelled_wh:.3f}</td>"
        f"<td>{run.metered_normalised:.4g}</td>"
        f"<td>{run.modelled_normalised:.4g}</td></tr>"
        for run in (a, b)
    )
    sd_rows = "".join(
        f"<tr><td class=l>{kind}: {name.replace('_', ' ')}</td>"
        f"<td>±{K_SIGMA * value * 100:.2f}</td></tr>"
        for kind, parts in (("metered", r.sd_metered), ("modelled", r.sd_modelled))
        for name, value in parts.items()
    )
    warnings = "".join(f"<div class=warn>{escape(w)}</div>" for w in r.warnings) or (
        "<p>None: no gaps, no counter glitches or drops, no modelled samples.</p>"
    )
    node_header = (
        "<tr><th class=l>node</th><th class=l>method</th><th>metered Wh ±2σ</th>"
        "<th>modelled Wh</th><th>model error %</th><th>power RMSE W</th><th>gaps</th>"
        "<th>counter events</th></tr>"
    )
    # one value per node over both runs, so one table, not a column repeated in each run's
    share_rows = "".join(
        f"<tr><td class=l>{escape(name)}</td><td>{points:+.2f}</td></tr>"
        for name, points in r.disagreement_pts.items()
    )
    per_node = "".join(
        f"<h2>Per node: run {escape(run.label)}</h2>"
        f"<table>{node_header}{_per_node_rows(run, r.accuracy_pct)}</table>"
        for run in (a, b)
    )
    # issue 14 fills `answer`: the first sentence, what EAMS saved at the wall, in words
    answer_html = f"<p id=answer class=answer>{escape(answer)}</p>\n" if answer else ""
    if links:
        items = "".join(f'<li><a href="{escape(h)}">{escape(t)}</a></li>' for t, h in links)
        intro = f"<p id=decisions-intro>{escape(links_intro)}</p>" if links_intro else ""
        answer_html += f"<h2>Decisions on record</h2>{intro}<ul id=decisions>{items}</ul>\n"
    if overview:
        head, *body = overview
        cells = "".join(f"<th>{escape(h)}</th>" for h in head)
        rows = "".join(
            "<tr>" + "".join(
                f"<td{' class=l' if j == 0 else ''}>{escape(c)}</td>" for j, c in enumerate(row)
            ) + "</tr>"
            for row in body
        )  # fmt: skip
        answer_html += f"<h2>The runs</h2><table id=runs-all><tr>{cells}</tr>{rows}</table>\n"
        if note:
            answer_html += f"<p id=clock>{escape(note)}</p>\n"
    if alerts:
        items = "".join(f"<div class=warn>{escape(a)}</div>" for a in alerts)
        answer_html += f"<div id=alerts>{items}</div>\n"
    loss = r.passed and r.saving_metered < 0
    badge = f"verdict {shown.replace(' ', '-')}" + (" LOSS" if loss else "")
    loss_html = (
        f"<p><b>The model agrees, but run {escape(b.label)} used more energy than run "
        f"{escape(a.label)}</b>: the check passes on a loss.</p>"
        if loss
        else ""
    )
    return f"""<!doctype html><html lang=en><head><meta charset=utf-8>
<title>{escape(title)}</title><style>{_CSS}</style></head><body>
<h1>{escape(title)}: run {escape(b.label)} vs run {escape(a.label)}</h1>
{answer_html}<h2>What was measured</h2>{_measured(r, about)}
<h2>Does the modelled saving hold at the wall? (VT-5)</h2>
<div id=verdict class="{badge}">{shown}</div>{loss_html}
<p>Metered saving at the wall <b>{r.saving_metered * 100:.2f} %</b>
 (±{K_SIGMA * _sd_pts(r.sd_metered):.2f}); modelled saving
 <b>{r.saving_modelled * 100:.2f} %</b> (±{K_SIGMA * _sd_pts(r.sd_modelled):.2f}). Difference
 <b>{r.difference_pts:+.2f} points</b> (±{K_SIGMA * r.sd_difference_pts:.2f}).
 {_verdict_text(r)} Compared by {norm[r.normalised_by]} ({escape(r.unit)}).</p>
<p class=small>Every ± on this page is 2σ (about 95 %); the JSON summary holds the standard
 uncertainties (1σ).</p>
{_img(plots.savings(r), "metered and modelled saving, their difference and the pass band")}
<h2>Runs</h2>
<table><tr><th class=l>run</th><th>window s</th><th>work core-s</th>
<th>metered Wh</th><th>modelled Wh</th><th>metered {escape(r.unit)}</th>
<th>modelled {escape(r.unit)}</th></tr>
{runs_rows}</table>
{f"<p>{escape(note)}</p>" if note else ""}
<h2>Uncertainty of the savings (points, ±2σ)</h2>
<table>{sd_rows}<tr><th class=l>difference D</th>
<th>±{K_SIGMA * r.sd_difference_pts:.2f}</th></tr></table>
<h2>Findings</h2>{warnings}
<h2>Where the difference comes from</h2>
<table><tr><th class=l>node</th><th>share of D (points)</th></tr>{share_rows}</table>
<p class=small>“share of D”: how many points of the metered−modelled difference vanish when
this node's modelled energy is replaced by its metered energy (in both runs).</p>
{per_node}
<h2>Energy per node</h2>{_img(plots.energy_per_node(r), "energy per node")}
<h2>Power over time</h2>{_img(plots.power_over_time(r), "power per node over time")}
<h2>How this was computed</h2><ul class=small>
<li>Metered energy: the PDU outlet's cumulative counter where it advanced at least
 {COUNTER_MIN_STEPS} steps, trusting only increments the outlet could have drawn (a reading
 off the counter's course and back is a glitch: ignored; a drop is a wrap or reset and a leap
 beyond the outlet's ceiling a jump: both stitched with the metered power across them), else
 the trapezoid of the metered power samples. Power the agents modelled is never
 counted as wall power.</li>
<li>A gap is an interval longer than {GAP_FACTOR:g} × the median interval between a quantity's
 samples; it is bridged linearly (never with zeros; at a window edge the nearest value is
 held) and charged range × length / √12 of uncertainty.</li>
<li>Modelled energy: each node's calibrated curve applied to the measured utilisation (the line
 P(u) = P_idle + (P_max − P_idle)·u, stepping to the measured active idle below the lowest
 loaded level where the calibration found an idle step); utilisation is a mean over the
 interval ending at its sample, so each value weighs its own interval.</li>
<li>Energy is compared by {norm[r.normalised_by]} ({escape(r.unit)}): per unit of work when
 both runs state it, per unit time when they differ in length without it.</li>
<li>Meter accuracy ±{r.accuracy_pct:g} % taken as a uniform bound (σ = a/√3), both as a per-outlet
 gain shared by runs A and B (cancels except through shifts of energy share) and as independent
 per-reading error. Calibration uncertainty from each node's P_idle/P_max CI
 (and its active idle's σ where the curve steps).</li>
<li>VT-5 passes when |D| ≤ {r.tolerance_pts:g} points and is resolved when 2σ of D is within
 that tolerance; an unresolved check is shown as {NOT_RESOLVED}, whatever D is.</li>
</ul></body></html>"""


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
) -> tuple[Path, Path]:
    """Write ``wallpower_report.html`` and ``wallpower_summary.json`` into ``out_dir``.

    Parameters
    ----------
    result : SavingCheck
    out_dir : Path
        Created as needed.
    title, note, about, answer, links, overview, alerts, links_intro
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
            render_html(result, title, note, about, answer, links, overview, alerts, links_intro)
        )
        json_path.write_text(json.dumps(summary_json(result, extra), indent=2) + "\n")
    except OSError as exc:
        raise WallPowerError(
            f"cannot write the report into {out_dir}: {exc.strerror or exc}"
        ) from exc
    return html_path, json_path
