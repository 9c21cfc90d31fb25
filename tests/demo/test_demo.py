"""``eams demo --quick`` end to end in a subprocess, as CI and a new user run it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from tests.servers.chromium import CHROMIUM, Browser

pytestmark = pytest.mark.integration
EAMS = str(Path(sys.executable).with_name("eams"))  # the console script of this venv


@pytest.mark.parametrize("data", ["shared", "none"])
def test_demo_quick_runs_to_the_end(tmp_path: Path, data: str) -> None:
    """As a new user runs it, with the shared data folder and without it (built-in curves and
    a synthetic workload: every pod must end there too, issue 35); without it, twice
    (``--repeats 2``: the answer over repeats, issue 35)."""
    out = tmp_path / "my demo, run?1"  # what a run SPEC would split on
    env = {**os.environ, "COLUMNS": "80"}  # a default terminal, and what a pipe gets
    repeats = 1
    if data == "none":
        env["EAMS_DATA_DIR"] = str(tmp_path / "no-data-here")
        repeats = 2
    result = subprocess.run(
        [EAMS, "demo", "--quick", "--out", str(out), "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        timeout=240 * repeats,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    stdout = result.stdout
    _check_repeats(out, stdout, repeats)
    for stage in ("1/4", "2/4", "3/4", "4/4"):
        assert stage in stdout
    before_the_sweeps = stdout.split("2/4", 1)[0]
    trace = "alibaba_v2017_batch_task_head20000.csv not found in"
    # what the missing data changes is said at the start, not after the runs
    assert (trace in before_the_sweeps) is (data == "none"), before_the_sweeps
    assert ("built-in" in before_the_sweeps) is (data == "none")
    assert "read through driver apc_rpdu2" in stdout
    assert sorted(p.name for p in (out / "calibration").glob("*.json")) == [
        f"mini-{i}.json" for i in range(1, 7)
    ]
    band = out / "telemetry" / "rho-0.3"
    for run in ("default", "default+pm", "eams+pm"):
        folder = band / run
        owner = [json.loads(line) for line in (folder / "mini-1.jsonl").read_text().splitlines()]
        assert "metered" in {r["source"] for r in owner}  # the PDU owner's came through SNMP
        for i in range(1, 7):  # every node's metered power carries that node's own cap
            own = [
                json.loads(line) for line in (folder / f"mini-{i}.jsonl").read_text().splitlines()
            ]
            own_caps = {r["power_cap_w"] for r in own if r["node"] == f"mini-{i}"}
            assert len(own_caps) == 1
            assert {r["power_cap_w"] for r in owner if r["node"] == f"mini-{i}"} == own_caps
    summary = json.loads((out / "report" / "wallpower_summary.json").read_text())
    assert summary["verdict"] in ("PASS", "FAIL")
    assert summary["normalised_by"] == "work"
    assert summary["rho"] == 0.3
    for key in ("saving_metered", "sd_metered", "passed", "resolvable"):
        assert key in summary
    transitions = summary["power_transitions"]
    assert set(transitions) == {"default", "default+pm", "eams+pm-mgr", "eams+pm"}
    kinds = {"sleep", "wake", "refused", "failed", "suspend_failed", "wake_failed", "suspect"}
    assert transitions["default"] == dict.fromkeys(kinds, 0)  # no manager there
    for run in ("default+pm", "eams+pm-mgr", "eams+pm"):
        assert set(transitions[run]) == kinds
    _check_power_log(out, summary, stdout)
    # the live loop's lag, per run, against the margin (issue 35, item 9)
    lag = summary["lag"]
    assert set(lag) == {"default", "default+pm", "eams+pm-mgr", "eams+pm"}
    for run, figures in lag.items():
        assert figures["margin_s"] == 0.25  # one agent period of the quick demo
        assert figures["arrival"]["n"] == 40 and figures["end"]["n"] == 40
        assert figures["sample"]["n"] > 0
        assert figures["meter"]["n"] > 0  # the PDU owner's readings, every outlet at once
        assert (figures["tick"]["n"] > 0) is (run != "default")  # no manager there
        assert isinstance(figures["exceeded"], bool)
    assert stdout.count("late: pod arrivals p95") == 4 * repeats
    assert summary["lag_explained"].startswith("The live loop")
    # the live path: every EAMS pod went through the live extender, placed on its answer
    live = summary["extender"]
    assert live["pods"] == 40
    assert live["prioritize_answered"] == live["prioritize_calls"] > 0  # its /metrics count
    assert live["decisions"] == live["prioritize_calls"]  # one recorded answer per call
    assert live["bound_to_highest_score"] == live["decisions"]
    # a pod is scored unless one node alone passed the filters (kube-scheduler skips scoring)
    assert live["decisions"] + live["unscored_binds"] == live["pods"]
    assert f"VT-5 {summary['shown_verdict']}" in stdout
    assert "completion s" in stdout  # the p95 column's header
    assert "…" not in stdout  # no table cell or header cut short at 80 columns
    html = out / "report" / "wallpower_report.html"
    assert f"report: {html}" in stdout
    assert html.read_text().count("data:image/png;base64,") == 3
    _check_units(stdout, summary, html.read_text())
    # the report says the loop's lag where it describes the run figures
    assert summary["lag_explained"] in unescape(" ".join(html.read_text().split()))
    _check_record(out, summary, tmp_path, complete=data == "shared")
    _check_power_states(out)
    _check_market(out, summary, stdout)
    if CHROMIUM is not None:  # the report as a reader sees it, rendered by Chromium
        with Browser(tmp_path / "profile") as browser:
            text = browser.evaluate(html, "document.body.innerText")
            badge = browser.evaluate(html, "document.getElementById('verdict').innerText")
            first = browser.evaluate(html, "document.getElementById('answer').innerText")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        assert lines[1] == first.strip()  # the first thing under the title
        basis = (
            "± at 2σ, one run's measurement"
            if repeats == 1
            else "mean of 2 repeats, ± its 95 % interval"
        )
        opening = f"At the wall, while the pods arrived (offered load ρ = 0.3; {basis}), "
        assert first.startswith(opening), first
        assert f"{_best(summary)} used the least energy per unit of work" in first, first
        assert "than the default scheduler alone" in first and "VT-5" in first
        from eams.demo.report import RUN_NAMES

        best_is_default = _best(summary) == RUN_NAMES["default"]
        assert "the power manager alone accounts for" in first or best_is_default, first
        assert summary["shares_explained"] in " ".join(first.split())
        assert " ".join(first.split()) in " ".join(stdout.split())  # the terminal says the same
        measured = text.split("What was measured", 1)[1].split("Does the modelled", 1)[0]
        assert "setup\tsimulated: no hardware was metered" in measured
        assert "PDU simulator" in measured and "virtual" in measured
        assert "ρ = 0.3" in measured and "40 " in measured  # the workload: pods and load
        assert "EAMS 0.1.0" in measured and " UTC to " in measured
        assert badge == summary["shown_verdict"]
        if not summary["resolvable"]:
            assert badge == "NOT RESOLVED"
    ingested = int(stdout.split("the extender ingested ")[1].split()[0])
    assert ingested > 0  # the agents pushed telemetry to the running extender


def _check_repeats(out: Path, stdout: str, repeats: int) -> None:
    """Issue 35: each repeat is its own band (telemetry, record, report, table), and the
    answer is over all of them: the mean of the repeats' savings, each stated."""
    summary = json.loads((out / "report" / "wallpower_summary.json").read_text())
    assert summary["repeats"] == summary["answer_over_repeats"] == repeats
    assert summary["repeat"] == 1
    eams = summary["savings"]["eams+pm"]
    assert len(eams["per_repeat"]) == repeats
    assert eams["saving_metered"] == pytest.approx(sum(eams["per_repeat"]) / repeats)
    assert len(summary["vt5_per_repeat"]) == repeats
    sleeps = summary["sleeps_explained"]  # the nodes slept in some repeats only (or None)
    assert sleeps is None or sleeps in " ".join(stdout.split())
    if repeats == 1:
        assert sleeps is None
        assert eams["saving_metered"] == summary["saving_metered"]  # the VT-5 check's run
        assert "repeat" not in stdout.split("4/4", 1)[1]
        return
    from eams.calibrate.calfile import load_calibration

    for k in range(2, repeats + 1):
        band = f"rho-0.3-repeat-{k}"
        # its own calibration files: the curves as calibrated, the power states measured again
        own = out / "calibration" / band
        assert sorted(p.name for p in own.glob("*.json")) == [f"mini-{i}.json" for i in range(1, 7)]
        first = load_calibration(out / "calibration" / "mini-2.json")
        again = load_calibration(own / "mini-2.json")
        assert again.p_idle_w == first.p_idle_w and again.power_states is not None
        assert again.power_states.measured_at != first.power_states.measured_at
        assert f"ρ = 0.3, repeat {k} of {repeats}: the power states measured again, into {own}" in (
            " ".join(stdout.split())
        )
        assert (out / "telemetry" / band / "eams+pm" / "mini-1.jsonl").is_file()
        assert (out / "record" / band / "eams+pm" / "decisions.jsonl").is_file()
        other = json.loads((out / "report" / band / "wallpower_summary.json").read_text())
        assert other["repeat"] == k and other["repeats"] == repeats
        assert other["answer_over_repeats"] == 1  # its own run's answer
        assert other["saving_metered"] == pytest.approx(eams["per_repeat"][k - 1])
        assert f"ρ = 0.3, repeat {k} of {repeats}: four live runs" in stdout
        assert f"report of ρ = 0.3, repeat {k} of {repeats}: " in stdout
        assert f"    ρ = 0.3, repeat {k} of {repeats}, eams+pm: " in stdout  # its runs' lines
        page = (out / "report" / band / "wallpower_report.html").read_text()
        assert '<a href="../wallpower_report.html">The demo&#39;s report: the answer over all' in (
            page
        )
    assert "Repeat by repeat, against the default run of the same repeat:" in " ".join(
        stdout.split()
    )
    verdicts = summary["vt5_per_repeat"]
    counts = ", ".join(f"{v} in {verdicts.count(v)}" for v in dict.fromkeys(verdicts))
    assert f"VT-5 on eams+pm: {counts} of the {repeats} repeats (repeat 1: " in " ".join(
        stdout.split()
    )


def _check_power_states(out: Path) -> None:
    """Issue 34: the calibration files carry the power states the demo measured, on every node
    but the one that never sleeps, and they hold the testbed's hidden figures."""
    from eams.calibrate.calfile import load_calibration
    from eams.demo.power import NODE_POWER

    power = NODE_POWER[True]
    for i in range(1, 7):
        states = load_calibration(out / "calibration" / f"mini-{i}.json").power_states
        if i == 1:  # the PDU owner and k3s server
            assert states is None
            continue
        assert states is not None and states.method == "outlet" and states.repeats == 3
        assert states.sleep_power_w == 0.0 and states.boot is not None
        assert states.shutdown is not None
        for cost, hidden_s in ((states.boot, power.boot_s), (states.shutdown, power.shutdown_s)):
            lo, hi = cost.time_s.ci95
            assert lo <= hidden_s <= hi, (i, cost.time_s)


def _check_market(out: Path, summary: dict, stdout: str) -> None:
    """Issue 34: the shares add up to eams+pm's saving; the market's wakes and the share of
    placements it cleared are the record's, said the same way in the terminal and the report."""
    from eams.demo.report import cleared_text
    from eams.scheduler.record import Power, Wake, read_records

    parts = summary["shares_pts"]
    total = sum(p["points"] for p in parts.values())
    assert total == pytest.approx(summary["savings"]["eams+pm"]["saving_metered"] * 100, abs=1e-6)
    if parts["placement"]["points"] < 0:  # the report says why, or that it is noise
        assert summary["placement_note"], summary
    records = read_records(out / "record" / "rho-0.3" / "eams+pm").records
    woken = [r for r in records if isinstance(r, Power) and r.reason == "market-bid"
             and r.to_state == "running" and r.result == "ok"]  # fmt: skip
    asked = {r.node for r in records if isinstance(r, Wake) and r.event == "asked"}
    wakes = summary["market_wakes"]
    assert wakes["wakes"] == len(woken) and {r.node for r in woken} <= asked
    assert wakes["held"] == sum(1 for r in records if isinstance(r, Wake) and r.event == "asked")
    mgr = read_records(out / "record" / "rho-0.3" / "eams+pm-mgr").records
    # the run without market wakes: no wake line, no wake for the market
    assert not [r for r in mgr if isinstance(r, Wake)]
    assert not [r for r in mgr if isinstance(r, Power) and r.reason == "market-bid"]
    cleared = cleared_text(summary["market"])
    html = unescape(" ".join((out / "report" / "wallpower_report.html").read_text().split()))
    assert f"The market cleared {cleared}" in " ".join(stdout.split())
    assert f"The market cleared {cleared}" in html


def _check_power_log(out: Path, summary: dict, stdout: str) -> None:
    """Issue 35 item 3: the demo's phase timeouts hold (no sound sleep or wake timed out), and
    the summary's counts are the power log's, failures said where there are any."""
    log = (out / "record" / "power.log").read_text().splitlines()
    assert not [x for x in log if "suspend-timeout" in x or "wake-timeout" in x], log
    bands = [summary, *summary["bands"].values()]  # the log holds every repeat's runs
    runs = [run for band in bands for run in band["power_transitions"].values()]
    transitions = [x for x in log if "power transition:" in x]
    # a repeat's power states measured again (issue 35) are in the log too, by their reason
    measuring = [x for x in transitions if "power-state calibration" in x]
    assert bool(measuring) is (len(bands) > 1)
    transitions = [x for x in transitions if x not in measuring]
    ok_off = [x for x in transitions if " to=off " in x and " result=ok " in x]
    ok_on = [x for x in transitions if " to=running " in x and " result=ok " in x
             and "NotReady after a wake" not in x]  # fmt: skip
    assert len(ok_off) == sum(r["sleep"] for r in runs)
    assert len(ok_on) == sum(r["wake"] for r in runs)
    assert len([x for x in transitions if " result=refused " in x]) == sum(
        r["refused"] for r in runs
    )
    assert len([x for x in transitions if " result=failed " in x]) == sum(r["failed"] for r in runs)
    assert sum(r["suspend_failed"] + r["wake_failed"] for r in runs) == 0
    suspect = set(re.findall(r"power manager: (\S+) asleep and suspect", "\n".join(log)))
    assert sum(r["suspect"] for r in runs) >= len(suspect)  # per run; the log has both runs
    html = (out / "report" / "wallpower_report.html").read_text()
    failed = any(r["failed"] or r["suspect"] for r in runs)  # said where there are any
    assert ("; failed: " in stdout) is failed
    here = any(r["failed"] or r["suspect"] for r in summary["power_transitions"].values())
    assert ("id=alerts" in html) is here  # the report's own runs


def _check_units(stdout: str, summary: dict, html: str) -> None:
    """Issue 35 item 4: the terminal's runs table, the report's and the JSON summary state the
    same figures in one clock, named in each of the three."""
    from eams.demo.live import CLOCK
    from eams.demo.report import RUN_COLUMNS

    assert summary["clock"] == CLOCK
    assert CLOCK in " ".join(stdout.split()) and CLOCK in html
    figures = summary["run_figures"]
    assert list(figures) == ["default", "default+pm", "eams+pm-mgr", "eams+pm"]
    expected = {
        label: [label]
        + ["—" if f[key] is None else fmt.format(f[key]) for key, _, fmt in RUN_COLUMNS]
        + [f"{f['sleeps']}/{f['wakes']}"]
        for label, f in figures.items()
    }
    terminal = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if cells and cells[0] in figures and cells[0] not in terminal:
            terminal[cells[0]] = cells  # the first table: the report's band (repeat 1)
    assert terminal == expected, (terminal, expected)
    table = html.split("<table id=runs-all>", 1)[1].split("</table>", 1)[0]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in table.split("<tr>")]
    assert {r[0]: r for r in rows if r} == expected
    # the wall-power check's own figures (its JSON runs and its HTML runs table) are the same
    for key, run in summary["runs"].items():
        f = figures[run["label"]]
        assert run["work_core_s"] == pytest.approx(f["work_core_s"], rel=1e-9)
        assert run["metered_normalised"] == pytest.approx(f["metered_j_per_core_s"], rel=1e-9)
        assert run["modelled_normalised"] == pytest.approx(f["modelled_j_per_core_s"], rel=1e-9)
        assert f"<td>{run['metered_normalised']:.4g}</td>" in html, key
        assert summary["p95_completion_s"][run["label"]] == f["p95_completion_s"]
    assert summary["unit"] == "J/core-s"


def _best(summary: dict) -> str:
    """How the answer names the run that used the least energy per unit of work."""
    from eams.demo.report import RUN_NAMES

    savings = {k: v["saving_metered"] for k, v in summary["savings"].items()}
    best = max(savings, key=lambda label: savings[label])
    return RUN_NAMES[best if savings[best] > 0 else "default"]


def _check_record(out: Path, summary: dict, tmp_path: Path, complete: bool = True) -> None:
    """The decision record beside the report: the three decisions that saved the most are
    linked, and ``eams explain`` names the reasons of one of them and of a slept node."""
    record = out / "record" / "rho-0.3" / "eams+pm"
    assert Path(summary["record"]) == record
    lines = [json.loads(x) for x in (record / "decisions.jsonl").read_text().splitlines()]
    # the extender's own lines: every EAMS pod it cleared (at /filter, so the unscored ones
    # too), with its bid and price; their bindings and ends told by POST /pending
    placements = [x for x in lines if x["kind"] == "placement"]
    # every pod whose /filter the extender answered; one it did not answer in kube-scheduler's
    # httpTimeout (a busy 2-core host) was bound without it, counted and said (ignorable)
    unanswered = set(summary["extender"]["unanswered_pods"])
    assert len(unanswered) <= summary["extender"]["pods"] // 4, summary["extender"]
    names = {p["pod"]["name"] for p in placements}
    assert not names & unanswered
    # without the data folder, a pod for which one node alone passed kube-scheduler's filters
    # (bound unscored) may have no line: a known gap of the record (issue 35), so there the
    # missing ones must be among the unscored binds
    missing = summary["extender"]["pods"] - len(unanswered) - len(names)
    assert missing == 0 or (not complete and 0 < missing <= summary["extender"]["unscored_binds"])
    cleared = [p for p in placements if p["cleared_node"] is not None]  # null: no node could
    assert cleared and all(p["bid"] is not None and p["price"] is not None for p in cleared)
    assert all(c["bid"] is not None for p in placements for c in p["candidates"])
    bound = {x["pod"]["name"]: x for x in lines if x["kind"] == "bound"}
    assert set(bound) == {p["pod"]["name"] for p in placements}
    # the honoured fraction is the measured one: every pod kube-scheduler asked the extender
    # to score went to its highest score (checked from the answers above), and that is its
    # cleared node, a clearing being among the nodes offered (test_reclearing.py), so each
    # binding the extender offered a choice for is honoured; a pod bound without scoring (one
    # node alone passed the filters) had no choice offered: scored false, honoured null
    live = summary["extender"]
    scored = [b for b in bound.values() if b["scored"]]
    assert len(scored) == live["decisions"]
    assert sum(b["scored"] is False for b in bound.values()) + missing == live["unscored_binds"]
    for b in scored:  # null only where the clearing had no node for the pod
        assert b["honoured"] is (True if b["cleared_node"] is not None else None), b
    assert all(b["honoured"] is None for b in bound.values() if not b["scored"])
    assert any(b["honoured"] for b in scored)
    ended = {x["pod"]["name"] for x in lines if x["kind"] == "ended"}
    assert ended == set(bound)
    energy = [json.loads(x) for x in (record / "energy.jsonl").read_text().splitlines()]
    assert 1 <= len(energy) <= summary["extender"]["decisions"]  # each pod it scored, once
    assert {e["pod"]["name"] for e in energy} <= set(bound)
    # on the node's measured curve over the pod's run (its ended line), split by utilisation
    ends = {x["pod"]["name"]: x for x in lines if x["kind"] == "ended"}
    for e in energy:
        assert e["energy_wh"] > 0 and e["method"] == "utilisation_share", e
        assert e["source"] in ("metered", "modelled")  # modelled where the meter gave none
        end = ends[e["pod"]["name"]]
        assert (e["started_at_s"], e["ended_at_s"]) == (end["started_at_s"], end["ended_at_s"])
    saved = summary["decisions_saved_most"]
    assert len(saved) <= 3  # none where no placement beat LeastAllocated's on the margin
    assert all(s["saved_wh"] > 0 and s["node"] != s["default_node"] for s in saved), saved
    assert [s["saved_wh"] for s in saved] == sorted((s["saved_wh"] for s in saved), reverse=True)
    # issue 35 item 5: the report features only placements the market cleared, says how many
    # it cleared, and explains the cycles; explain never marks a node cleared and gated bare
    for s in saved:
        assert bound[s["pod"]]["honoured"] is True and bound[s["pod"]]["bound_node"] == s["node"]
        assert bound[s["pod"]]["cleared_node"] == s["node"]
    market = summary["market"]
    assert market == {
        "pods": len(bound),
        "cleared": sum(1 for b in bound.values() if b["honoured"]),
        "cleared_nowhere": sum(1 for b in bound.values() if b["scored"] and b["honoured"] is None),
        "unscored": sum(1 for b in bound.values() if b["scored"] is False),
        "overridden": sum(1 for b in bound.values() if b["honoured"] is False),
    }
    html = (out / "report" / "wallpower_report.html").read_text()
    assert f"The market cleared {market['cleared']} of the {market['pods']} placements" in html
    assert "A scheduling cycle is one pass" in html
    assert summary["cycles_explained"] in unescape(html)
    eams_cycles = f"eams+pm {live['cycles']} for {live['pods']} pods"
    assert eams_cycles in summary["cycles_explained"]
    from eams.scheduler.record import read_records
    from eams.scheduler.record.explain import explain_pod, render_pod

    records = read_records(record).records
    for name in bound:
        explained = explain_pod([r for r in records if getattr(r, "pod", None) and
                                 r.pod.name == name], name)  # fmt: skip
        text = render_pod(explained)
        shown = explained["decision"]  # the decision on show (a held pod may have several)
        gated_nodes = {g["node"] for g in shown["gated"]} if shown else set()
        for line in text.splitlines():
            if line.rstrip().endswith("← cleared"):  # a bare mark: the node is not gated
                assert line.split()[0] not in gated_nodes, text
    # each link opens the pod's decision as `eams explain` prints it, not the raw JSONL
    hrefs = re.findall(r"<ul id=decisions>.*?</ul>", html)[0]
    pages = re.findall(r'href="(decisions/[^"]+\.html)"', hrefs)
    assert len(pages) == max(1, len(saved)) and "decisions.jsonl" not in hrefs
    assert saved or "No placement used less energy on its node's calibrated line" in unescape(html)
    for s, href in zip(saved, pages, strict=False):
        page = unescape((out / "report" / href).read_text())
        assert f"pod demo/{s['pod']}" in page and "← cleared" in page
    pod, node = (
        (saved[0]["pod"], saved[0]["node"])
        if saved
        else (cleared[0]["pod"]["name"], cleared[0]["cleared_node"])
    )
    text = _explain(f"demo/{pod}", record, tmp_path)
    assert f"pod demo/{pod}" in text and "active mode" in text
    assert node in text and "← cleared" in text
    assert "score" in text and "honoured" in text and "Wh attributed" in text
    assert "bid" in text and "price" in text
    slept = [
        json.loads(x)
        for x in (record / "power.jsonl").read_text().splitlines()
        if json.loads(x)["to_state"] == "off" and json.loads(x)["result"] == "ok"
    ]
    assert len(slept) == summary["power_transitions"]["eams+pm"]["sleep"]
    if slept:
        why = _explain(f"node/{slept[0]['node']}", record, tmp_path)
        assert "idle-past-break-even" in why and "running → off" in why


def _explain(target: str, record: Path, cwd: Path) -> str:
    """``eams explain TARGET --record RECORD``'s output (it must succeed)."""
    done = subprocess.run(
        [EAMS, "explain", target, "--record", str(record)],
        capture_output=True, text=True, timeout=60, cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _sigint_as_a_terminal_gives_it() -> None:
    # A job a non-interactive shell starts in the background inherits SIGINT ignored, and an
    # ignored signal stays ignored across exec (Python then installs no KeyboardInterrupt
    # handler). A process group of its own would not help: it changes who a terminal's ^C
    # reaches, not the disposition. So the demo starts as from a terminal: SIGINT default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_the_replay_stops_everything(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [EAMS, "demo", "--quick", "--out", str(tmp_path / "demo")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        preexec_fn=_sigint_as_a_terminal_gives_it,  # between fork and exec: one disposition
    )
    try:
        seen = []
        assert proc.stdout is not None
        for line in proc.stdout:  # the demo prints as it goes; ends if it exits early
            seen.append(line)
            if "extender (active mode) at" in line:
                break
        text = "".join(seen)
        if "extender (active mode) at" not in text:  # its stdout ended: it exited early
            pytest.fail(text + proc.communicate(timeout=60)[1])
        proc.send_signal(signal.SIGINT)  # agents, extender and simulator are all running now
        # the agents' and the extender's threads are not daemons: left running, they would
        # keep the interpreter alive and this would time out
        rest, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, text + rest + stderr
    assert "Traceback" not in stderr and "aborted" in stderr


def test_unwritable_output_folder_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "a-file" / "demo"
    result = subprocess.run(
        [EAMS, "demo", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"eams: error: cannot write the demo's output into {out}: Not a directory "
        f"({out / 'calibration'}); choose another folder with --out"
    )
    assert "1/4" not in result.stdout  # refused before the simulator started
