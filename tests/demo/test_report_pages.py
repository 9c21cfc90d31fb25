"""Issue 35 item 7: what the demo's report links to is readable, and every report is found."""

from __future__ import annotations

from html import unescape
from pathlib import Path

from click.testing import CliRunner

from eams.cli import cli
from eams.demo.report import _example_pod, decision_page, other_reports, paths_text
from eams.demo.runs import Band
from tests.record.recorded import record_run


def test_a_decision_link_opens_what_eams_explain_prints(tmp_path: Path) -> None:
    record = tmp_path / "record" / "rho-0.3" / "eams+pm"
    record_run(record)
    report = tmp_path / "report"
    page = decision_page(record, report, "job-0")
    assert page == report / "decisions" / "job-0.html"
    said = CliRunner().invoke(cli, ["explain", "job-0", "--record", str(record)])
    assert said.exit_code == 0, said.output
    html = page.read_text()
    shown = unescape(html.split("<pre id=text>", 1)[1].split("</pre>", 1)[0])
    assert shown.strip() == said.output.strip()  # the same text, a page not 300 KB of JSONL
    assert "<pre id=text>" in html and 'decisions.jsonl">' in html
    assert 'href="../wallpower_report.html"' in html
    assert 'href="../../record/rho-0.3/eams+pm/decisions.jsonl"' in html  # raw, beside it
    assert _example_pod(record) is not None  # the page shown when none saved energy


def test_every_other_bands_report_is_printed(tmp_path: Path) -> None:
    """Other offered loads' reports and, issue 35, every repeat's after the first."""
    bands = [Band(0.8, "trace", 1.0, [], repeat=k, repeats=2) for k in (1, 2)]
    bands.append(Band(0.3, "trace", 1.0, []))
    others = other_reports(bands, tmp_path / "report")
    assert others == [
        tmp_path / "report" / "rho-0.8-repeat-2" / "wallpower_report.html",
        tmp_path / "report" / "rho-0.3" / "wallpower_report.html",
    ]
    text = paths_text(
        tmp_path / "r.html", tmp_path / "s.json", tmp_path / "rec",
        [(b.title, path) for b, path in zip(bands[1:], others, strict=True)],
    )  # fmt: skip
    assert f"report of ρ = 0.8, repeat 2 of 2: {others[0]}" in text.splitlines()
    assert f"report of ρ = 0.3: {others[1]}" in text.splitlines()
    assert text.splitlines()[0] == f"report: {tmp_path / 'r.html'}"
