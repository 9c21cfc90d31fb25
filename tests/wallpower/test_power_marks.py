"""Issue 35 item 7: the power-over-time plot marks where a node was put to sleep or woken."""

from __future__ import annotations

from pathlib import Path

from eams.calibrate.wallpower import check_runs, load_fleet
from eams.calibrate.wallpower.plots import MARK_STYLE, PowerMark, power_over_time_figure
from eams.demo.live import LiveRun
from eams.demo.report import power_marks
from eams.demo.runs import Band
from eams.scheduler.record import Power, Recorder, WriterSettings
from tests.wallpower.test_vt5 import _runs


def _marked(fig) -> dict[tuple[int, int], list[tuple[str, float]]]:  # type: ignore[no-untyped-def]
    """(row, column) of each subplot → the (kind, x) of its mark lines."""
    axes = fig.axes
    out = {}
    for i, ax in enumerate(axes):
        lines = [(line.get_gid(), line.get_xdata()[0]) for line in ax.get_lines()]
        out[(i // 2, i % 2)] = sorted((g, float(x)) for g, x in lines if g in MARK_STYLE)
    return out


def test_each_transition_is_a_line_on_its_nodes_row_in_its_run(two_runs, fleet_dir) -> None:
    result = check_runs(*_runs(two_runs), load_fleet(fleet_dir))
    names = list(result.a.nodes)
    marks = {
        "B": [PowerMark("n3", 12.5, "sleep"), PowerMark("n3", 40.0, "wake"),
              PowerMark("n5", 20.0, "sleep")],
        "not a run": [PowerMark("n1", 5.0, "sleep")],  # another run's: not drawn here
    }  # fmt: skip
    plain = _marked(power_over_time_figure(result))
    assert all(not v for v in plain.values())
    fig = power_over_time_figure(result, marks)
    drawn = _marked(fig)
    assert drawn[(names.index("n3"), 1)] == [("sleep", 12.5), ("wake", 40.0)]
    assert drawn[(names.index("n5"), 1)] == [("sleep", 20.0)]
    assert sum(len(v) for v in drawn.values()) == 3  # nothing in run A's column, nor elsewhere
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert "node put to sleep" in legend and "node woken" in legend
    assert "node woken" not in [
        t.get_text()
        for t in power_over_time_figure(result, {"B": marks["B"][:1]})
        .axes[1]
        .get_legend()
        .get_texts()
    ]


def test_the_demo_marks_the_transitions_of_its_power_record(tmp_path: Path) -> None:
    start_s, end_s = 1_800_000_000.0, 1_800_000_010.0  # a 10 s window
    runs = [
        LiveRun(label, tmp_path / label, start_ns=int(start_s * 1e9), end_ns=int(end_s * 1e9))
        for label in ("default", "default+pm", "eams+pm")
    ]
    band = Band(0.3, "a trace", 10.0, runs)
    lines = [
        ("mini-2", 3.0, "running", "off", "ok"),
        ("mini-2", 9.5, "off", "running", "ok"),
        ("mini-4", 4.0, "running", "off", "refused"),  # did not happen: no mark
        ("mini-5", 6.0, "running", "off", "failed"),
        ("mini-6", 12.0, "running", "off", "ok"),  # after the window: not drawn
    ]
    folder = tmp_path / "record" / band.name / "eams+pm"
    with Recorder(WriterSettings(folder=folder, prefix="power")) as recorder:
        for node, at, was, to, result in lines:
            recorder.submit(
                Power(at_s=start_s + at, mode="active", node=node, from_state=was,
                      to_state=to, reason="r", action="outlet", result=result)
            )  # fmt: skip
    marks = power_marks(band, tmp_path / "record")
    assert set(marks) == {"eams+pm"}  # default and default+pm have no record folder here
    assert marks["eams+pm"] == [PowerMark("mini-2", 3.0, "sleep"), PowerMark("mini-2", 9.5, "wake")]
