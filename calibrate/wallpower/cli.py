"""``eams wallpower``: the VT-5 wall-power check."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from eams.calibrate.wallpower.check import TOLERANCE_PTS, SavingCheck, check_runs
from eams.calibrate.wallpower.fleet import load_fleet
from eams.calibrate.wallpower.load import load_run
from eams.calibrate.wallpower.report import NOT_RESOLVED, shown_verdict, write_report
from eams.calibrate.wallpower.spec import FORMS, RunSpec, parse_run_spec
from eams.cli import FiniteFloatRange, ValueType

EXIT_FAIL = 3


_LARGEST_TERM = {
    ("metered", "meter_gain"): "the meter's stated accuracy is the largest part of it",
    ("metered", "meter_readings"): "the meter's reading noise is the largest part of it",
    ("modelled", "calibration"): "the fitted power models' uncertainty is the largest part of it",
    (
        "modelled",
        "sampling",
    ): "the utilisation samples (too few, or gaps) are the largest part of it",
}
"""What the reader is told when a term other than the metered sampling dominates the
difference's uncertainty (:attr:`SavingCheck.sd_metered`, :attr:`SavingCheck.sd_modelled`)."""


def _why_unresolved(result: SavingCheck) -> str:
    """Why the difference's 2σ is wider than the band, named by its largest term. The metered
    sampling term is the run's: its readings lost (gaps in power-integrated nodes, bridged and
    charged to it; the most one node lost is named) or too few of them to average the noise
    away (the run is too short); any other term says what it is."""
    terms = {("metered", k): v for k, v in result.sd_metered.items()}
    terms |= {("modelled", k): v for k, v in result.sd_modelled.items()}
    largest = max(terms, key=lambda k: terms[k])
    if largest in _LARGEST_TERM:
        return _LARGEST_TERM[largest]
    lost_s, run_s = max(
        (
            (sum(gap.length_s for gap in n.gaps), run.duration_s)
            for run in (result.a, result.b)
            for n in run.nodes.values()
            if n.method != "counter"  # a counter counts through a gap: it adds nothing there
        ),
        default=(0.0, 0.0),
    )
    if lost_s > 0:
        return (
            f"gaps in the metered data (up to {lost_s:.1f} s of a node's {run_s:.1f} s run) "
            "widen it"
        )
    return "the run is too short to tell"


def summary_lines(result: SavingCheck) -> list[str]:
    """The check's outcome as a few plain lines (CLI and demo).

    Parameters
    ----------
    result : SavingCheck

    Returns
    -------
    list of str
        The verdict line (:func:`~eams.calibrate.wallpower.report.shown_verdict`; savings in
        %, difference in points with 2σ), one line per run (window s, metered and modelled
        Wh), the node with the largest share of the difference, then every finding prefixed
        ``note:``.
    """
    r = result
    shown = shown_verdict(r)
    if shown == NOT_RESOLVED:
        outcome = "within" if r.passed else "outside"
        why = _why_unresolved(r)
        shown += f" (the difference is {outcome} the band, but its uncertainty is wider: {why})"
    lines = [
        f"VT-5 {shown} — does the model agree with the wall? "
        f"metered saving {r.saving_metered * 100:.2f} % vs modelled "
        f"{r.saving_modelled * 100:.2f} % → difference {r.difference_pts:+.2f} points "
        f"(±{2 * r.sd_difference_pts:.2f} at 2σ; pass within ±{r.tolerance_pts:g})",
    ]
    for run in (r.a, r.b):
        lines.append(
            f"  run {run.label}: {run.duration_s:.1f} s, metered {run.metered_wh:.3f} Wh, "
            f"modelled {run.modelled_wh:.3f} Wh"
        )
    worst = max(r.disagreement_pts.items(), key=lambda kv: abs(kv[1]))
    lines.append(f"  largest share of the difference: node {worst[0]} ({worst[1]:+.2f} points)")
    lines += [f"  note: {w}" for w in r.warnings]
    return lines


_SPEC = ValueType(parse_run_spec, "SPEC")
_PERCENT = FiniteFloatRange(min=0, max=100, min_open=True)
_SPEC_FORMS = "\b\nSPEC is one of\n" + "".join(f"  {form}\n" for form in FORMS.split(" or "))


@click.group()
def wallpower() -> None:
    """VT-5: does the saving the model predicts appear at the wall?"""


@wallpower.command(epilog=_SPEC_FORMS)
@click.option("--run-a", "run_a", required=True, type=_SPEC, help="Baseline run (forms below).")
@click.option("--run-b", "run_b", required=True, type=_SPEC, help="Candidate run (same forms).")
@click.option(
    "--calibration",
    "calibration_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Directory of calibration files (NODE.json), one per node.",
)
@click.option(
    "--out",
    "out_dir",
    default=Path("wallpower-report"),
    show_default=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Where wallpower_report.html and wallpower_summary.json go.",
)
@click.option(
    "--accuracy-pct",
    default=3.0,
    show_default=True,
    type=_PERCENT,
    help="The meter's stated accuracy, ±% per reading (APC rPDU2: 3).",
)
@click.option(
    "--tolerance-pts",
    default=TOLERANCE_PTS,
    show_default=True,
    type=_PERCENT,
    help="VT-5 tolerance on metered − modelled saving (percentage points).",
)
@click.option(
    "--outlet-rating-w",
    default=None,
    type=FiniteFloatRange(min=0, min_open=True),
    help="The PDU outlets' power rating, W (APC rPDU2 10 A C13 at 230 V: 2300): no energy "
    "counter step implying more is trusted. Default: twice the most each node drew.",
)
def check(
    run_a: RunSpec,
    run_b: RunSpec,
    calibration_dir: Path,
    out_dir: Path,
    accuracy_pct: float,
    tolerance_pts: float,
    outlet_rating_w: float | None,
) -> None:
    """Compare the metered and the modelled saving of run B over run A.

    Writes an HTML report and a JSON summary to --out and prints the verdict (NOT RESOLVED
    when the uncertainty is wider than the tolerance). Exit status 0 on PASS, 3 on FAIL (the
    report is written either way; an unresolved check exits as its face value), 1 on an error,
    2 on a bad command line (one line on stderr).
    """
    fleet = load_fleet(calibration_dir)
    runs = load_run(run_a, "A"), load_run(run_b, "B")
    result = check_runs(
        *runs,
        fleet,
        accuracy_pct=accuracy_pct,
        tolerance_pts=tolerance_pts,
        outlet_rating_w=outlet_rating_w,
    )
    html_path, json_path = write_report(result, out_dir)
    for line in summary_lines(result):
        click.echo(line)
    click.echo(f"report: {html_path}\nsummary: {json_path}")
    if not result.passed:
        sys.exit(EXIT_FAIL)
