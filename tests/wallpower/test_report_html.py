"""The report's HTML: rendered from templates shipped as package data, every value escaped."""

from __future__ import annotations

from dataclasses import replace
from html.parser import HTMLParser
from importlib.resources import files

from eams.calibrate.wallpower import check_runs, load_fleet
from eams.calibrate.wallpower.check import SavingCheck
from eams.calibrate.wallpower.report import About, render_html
from tests.wallpower.test_vt5 import _runs

EVIL = "<script>alert('x')</script>"


class _Tags(HTMLParser):
    """The start tags and the text of a page, as a browser's parser splits them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.hrefs += [v or "" for k, v in attrs if k == "href"]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _renamed(result: SavingCheck, old: str, new: str) -> SavingCheck:
    """``result`` with node ``old`` called ``new`` everywhere (tables, shares, plots)."""

    def run(r):  # type: ignore[no-untyped-def]
        return replace(r, nodes={new if k == old else k: v for k, v in r.nodes.items()})

    shares = {new if k == old else k: v for k, v in result.disagreement_pts.items()}
    return replace(result, a=run(result.a), b=run(result.b), disagreement_pts=shares)


def test_the_report_template_is_package_data() -> None:
    template = files("eams.calibrate.wallpower").joinpath("templates/report.html.j2")
    assert template.is_file()
    assert "{{ answer }}" in template.read_text()


def test_a_node_or_pod_called_script_comes_out_as_text(two_runs, fleet_dir) -> None:
    a, b = _runs(two_runs)
    result = _renamed(check_runs(a, b, load_fleet(fleet_dir)), "n1", f"n1{EVIL}")
    result = replace(result, warnings=(*result.warnings, f"pod {EVIL} failed"))
    html = render_html(
        result,
        title=f"check {EVIL}",
        note=EVIL,
        about=About(setup=EVIL, workload=EVIL),
        answer=EVIL,
        links=[(f"pod {EVIL}", f'x.html" onclick="{EVIL}')],
        overview=[["run", EVIL], [EVIL, "1"]],
        alerts=[EVIL],
        links_intro=EVIL,
    )
    page = _Tags()
    page.feed(html)
    assert "script" not in page.tags  # not one element made of a name
    assert page.hrefs == [f'x.html" onclick="{EVIL}']  # one attribute, quotes kept inside
    text = "".join(page.text)
    # the title twice (<title>, <h1>), the node in both runs' tables and the shares, and each
    # of the caller's texts: all read as the characters they are
    assert text.count(EVIL) >= 2 + 3 + 10, text.count(EVIL)
    assert "&lt;script&gt;" in html and "<script>" not in html


def test_other_reports_are_linked(two_runs, fleet_dir) -> None:
    html = render_html(
        check_runs(*_runs(two_runs), load_fleet(fleet_dir)),
        see_also=[("the same three runs at ρ = 0.3", "rho-0.3/wallpower_report.html")],
    )
    assert (
        '<h2>Other reports</h2><ul id=see-also><li><a href="rho-0.3/wallpower_report.html">'
        "the same three runs at ρ = 0.3</a></li></ul>"
    ) in html
