"""The wall-power report as a reader sees it: rendered by headless Chromium (real browser, CSS
applied), read back over the DevTools protocol (:mod:`tests.servers.chromium`).

The demo's report ("simulated" said on the page) is checked where the demo runs, in
``tests/demo/test_demo.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eams.calibrate.wallpower import check_runs, load_fleet, write_report
from eams.calibrate.wallpower.report import NOT_RESOLVED, About
from tests.servers.chromium import Browser, require_chromium
from tests.wallpower.test_vt5 import _runs

pytestmark = pytest.mark.integration

GREEN = "rgb(46, 125, 50)"  # the PASS badge
SEEN = """JSON.stringify({
  verdict: document.getElementById('verdict').innerText,
  colour: getComputedStyle(document.getElementById('verdict')).backgroundColor,
  first: document.querySelector('h1').nextElementSibling.innerText,
  text: document.body.innerText,
})"""
"""What a reader sees: the badge's text and colour, what follows the title, all the text."""


def _seen(browser: Browser, html: Path) -> dict:
    return json.loads(browser.evaluate(html, SEEN))


def test_an_unresolvable_check_is_not_shown_as_a_pass(two_runs, fleet_dir, tmp_path) -> None:
    require_chromium()
    a, b = _runs(two_runs)
    fleet = load_fleet(fleet_dir)
    resolved = check_runs(a, b, fleet)
    assert resolved.passed and resolved.resolvable  # the right fleet: a clear pass
    # a meter stated ±30 % and a tolerance above |D| but below its 2σ: a pass at face value
    # that the data cannot back
    noisy = check_runs(a, b, fleet, accuracy_pct=30.0)
    two_sigma = 2 * noisy.sd_difference_pts
    assert abs(noisy.difference_pts) < two_sigma
    tolerance = (abs(noisy.difference_pts) + two_sigma) / 2
    unresolved = check_runs(a, b, fleet, accuracy_pct=30.0, tolerance_pts=tolerance)
    assert unresolved.passed and not unresolved.resolvable
    clear = write_report(resolved, tmp_path / "clear")[0]
    murky = write_report(unresolved, tmp_path / "murky", about=About(setup="a test bench"))[0]
    with Browser(tmp_path / "profile") as browser:
        shown_clear, shown_murky = _seen(browser, clear), _seen(browser, murky)
    assert shown_clear["verdict"] == "PASS" and shown_clear["colour"] == GREEN
    assert shown_murky["verdict"] == NOT_RESOLVED and shown_murky["colour"] != GREEN
    assert "PASS" not in shown_murky["text"]
    assert "this measurement cannot tell whether VT-5 holds" in shown_murky["text"]
    # what was measured comes first; the caller's setup is said, the windows are UTC dates
    assert shown_murky["first"] == "What was measured"
    assert "setup\ta test bench" in shown_murky["text"]
    assert " UTC to " in shown_murky["text"] and "EAMS 0.1.0" in shown_murky["text"]
    assert "setup\tnot stated" in shown_clear["text"]


def test_the_answer_sentence_leads_the_report(two_runs, fleet_dir, tmp_path) -> None:
    """The place the power-manager issue's first sentence goes: right under the title."""
    require_chromium()
    result = check_runs(*_runs(two_runs), load_fleet(fleet_dir))
    answer = "Run B used 12 % less energy per unit of work than run A at the wall."
    html = write_report(result, tmp_path / "report", answer=answer)[0]
    with Browser(tmp_path / "profile") as browser:
        shown = _seen(browser, html)
    assert shown["first"] == answer
