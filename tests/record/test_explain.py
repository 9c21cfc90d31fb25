"""``eams explain`` on a recorded run: a pod's reasons and outcome, a node's power decisions and
placements, ``--json``, rotated files, and the exit statuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from eams.cli import cli
from eams.scheduler.record import PodRef, Recorder, WriterSettings
from eams.scheduler.record.files import record_files
from eams.scheduler.record.schema import Placement
from tests.record.conftest import window
from tests.record.recorded import record_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Placement]]:
    folder = tmp_path_factory.mktemp("record")
    placements = record_run(folder)
    assert len(record_files(folder)) > 2  # rotated: the reader must read several files
    return folder, placements


def explain(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["explain", *args])
    return result.exit_code, result.output


def test_a_pod_names_its_reasons_and_what_happened(run: tuple[Path, list[Placement]]) -> None:
    folder, placements = run
    first = placements[0]
    code, out = explain("default/job-0", "--record", str(folder))
    assert code == 0, out
    assert f"cleared   {first.cleared_node} at price" in out
    assert "active mode" in out and f"clearing {first.clearing_id} (3 pods)" in out
    assert f"method {first.method}" in out
    assert "within J·ε = 3 × " in out
    assert "under the headroom floor (extender /filter): 1: mini-3 (headroom 0.05)" in out
    assert "at or over its power cap (headroom ≤ 0): 1: mini-4 (headroom -0.1)" in out
    assert "mini-5" in out and "stale (> 15 s: bid discounted)" in out
    assert "no telemetry" in out  # mini-6
    assert f"bound to {first.cleared_node} by kube-scheduler at 2025-01-02T03:04:06" in out
    assert "(honoured: the cleared node)" in out
    assert "ended     Succeeded at 2025-01-02T03:09:08.000000Z after 300 s" in out
    assert "energy    1.75 Wh attributed (modelled by calibrated_line)" in out


def test_an_overridden_choice_says_so(run: tuple[Path, list[Placement]]) -> None:
    folder, placements = run
    code, out = explain("job-1", "--record", str(folder))  # a bare name, any namespace
    assert code == 0, out
    assert (
        "bound to mini-6 by kube-scheduler at 2025-01-02T03:04:06.000000Z "
        f"(NOT honoured: the extender cleared {placements[1].cleared_node})"
    ) in out
    code, out = explain("pod/job-2", "--record", str(folder))
    assert "after     no binding on record" in out
    code, out = explain("batch-1", "--record", str(folder))  # bound without being scored
    assert (
        "bound to mini-6 by kube-scheduler at 2025-01-02T03:04:06.000000Z (not scored: "
        f"kube-scheduler bound it without asking the extender; it had cleared "
        f"{placements[4].cleared_node})"
    ) in out


def test_top_bounds_the_candidate_table(run: tuple[Path, list[Placement]]) -> None:
    folder, _ = run
    _, out = explain("uid-0", "--record", str(folder), "--top", "2")  # by UID
    assert "candidates (best 2 of 6 nodes by bid):" in out


def test_json_carries_the_records(run: tuple[Path, list[Placement]]) -> None:
    folder, placements = run
    code, out = explain("default/job-0", "--record", str(folder), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["kind"] == "pod" and data["honoured"] is True
    assert data["decision"]["clearing_id"] == placements[0].clearing_id
    assert data["decision"]["gated_counts"] == {"headroom_floor": 1, "capped": 1}
    assert data["ended"]["runtime_s"] == 300.0 and data["energy_wh"] == 1.75


def test_a_node_shows_its_power_decisions_and_placements(
    run: tuple[Path, list[Placement]],
) -> None:
    folder, placements = run
    code, out = explain("node/mini-4", "--record", str(folder))
    assert code == 0, out
    assert "power decisions: 2" in out
    assert (
        "active: running → suspended (idle_past_break_even: empty 620 s > break-even 240 s)" in out
    )
    assert "[idle_s=620, break_even_s=240] → ok" in out
    assert "suspended → running (pods_pending)" in out
    assert "at or over its power cap (headroom ≤ 0) ×5" in out  # gated in all five decisions
    cleared_node = placements[0].cleared_node
    code, out = explain(f"node/{cleared_node}", "--record", str(folder), "--json")
    data = json.loads(out)
    assert data["cleared_here"] == sum(p.cleared_node == cleared_node for p in placements)
    assert data["bound_honoured"] >= 1 and data["energy_wh"] == 1.75


def test_a_bare_node_name_is_found(run: tuple[Path, list[Placement]]) -> None:
    folder, _ = run
    code, out = explain("mini-4", "--record", str(folder))
    assert code == 0 and out.startswith("node mini-4")


def test_a_single_rotated_file_can_be_read(run: tuple[Path, list[Placement]]) -> None:
    folder, _ = run
    for f in record_files(folder):
        code, out = explain("node/mini-4", "--record", str(f))
        if code == 0:
            break
    else:
        pytest.fail("no single file explained mini-4")
    assert out.startswith("node mini-4")


def _eams(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from eams.cli import main; main()", *args],
        capture_output=True,
        text=True,
    )


def test_exit_statuses(run: tuple[Path, list[Placement]], tmp_path: Path) -> None:
    folder, _ = run
    missing = _eams("explain", "default/nobody", "--record", str(folder))
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        f"eams: error: no placement decision on record for pod 'default/nobody' in {folder}"
    ]
    assert _eams("explain", "x", "--record", str(folder), "--extender", "http://h").returncode == 2
    assert _eams("explain", "x").returncode == 2  # neither
    assert _eams("explain", "x", "--record", str(tmp_path / "absent")).returncode == 2
    assert _eams("explain", "x", "--extender", "ftp://h").returncode == 2
    assert _eams("explain", "x", "--record", str(folder), "--top", "0").returncode == 2
    unreachable = _eams("explain", "x", "--extender", "http://127.0.0.1:9")
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith("eams: error: extender http://127.0.0.1:9/decisions")


def test_a_name_that_is_both_a_pod_and_a_node_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    placements = record_run(folder)
    with Recorder(WriterSettings(folder=folder, prefix="extra")) as recorder:  # a pod "mini-4"
        pod = msgspec.structs.replace(placements[0].pod, name="mini-4", uid="m4")
        recorder.submit(msgspec.structs.replace(placements[0], pod=pod))
        recorder.flush()
    code, out = explain("mini-4", "--record", str(folder))
    assert code == 2 and "say pod/mini-4 or node/mini-4" in out
    code, out = explain("pod/mini-4", "--record", str(folder))
    assert code == 0 and out.startswith("pod default/mini-4")


def test_a_bare_name_in_two_namespaces_explains_the_latest_and_lists_the_other(
    tmp_path: Path,
) -> None:
    older, newer = window(1, at_s=100.0)[0], window(1, at_s=200.0)[0]
    older = msgspec.structs.replace(older, pod=PodRef(namespace="team-a", name="web", uid="a"))
    newer = msgspec.structs.replace(newer, pod=PodRef(namespace="team-b", name="web", uid="b"))
    with Recorder(WriterSettings(folder=tmp_path)) as recorder:
        recorder.submit_all([older, newer])
    code, out = explain("web", "--record", str(tmp_path))
    assert code == 0
    assert out.startswith("pod team-b/web (uid b)")
    assert "also matching: team-a/web (uid a)" in out


def test_a_cleared_node_also_gated_is_said_once_without_contradiction() -> None:
    """Issue 35 item 5: a clearing may choose a node its snapshot also puts under the headroom
    floor (the bid's gate is soft); the candidate's mark and the gated line must say both, not
    "← cleared" beside a bare "under the headroom floor"."""
    from eams.scheduler.record.explain import explain_pod, render_pod
    from eams.scheduler.record.schema import Candidate, Certificate, Gated

    placement = Placement(
        at_s=1_700_000_000.0, mode="active", clearing_id="abc-1", batch_pods=1,
        pod=PodRef(namespace="demo", name="task-680", uid="u"), cleared_node="mini-1",
        price=0.0, bid=0.004, method="short_lists", fell_back=False,
        certificate=Certificate(kind="exact", bound=0.0, value=0.004),
        candidates=[
            Candidate(node="mini-1", bid=0.004, price=0.0, headroom=0.04, age_s=0.1, gate=0.4,
                      score=10),
            Candidate(node="mini-2", bid=0.003, price=0.0, headroom=0.5, age_s=0.1, gate=1.0,
                      score=7),
        ],
        candidates_total=6, gated_counts={"headroom_floor": 1},
        gated=[Gated(node="mini-1", reason="headroom_floor", headroom=0.04, age_s=0.1)],
    )  # fmt: skip
    text = render_pod(explain_pod([placement], "demo/task-680"))
    row = next(line for line in text.splitlines() if line.strip().startswith("mini-1"))
    assert "← cleared, though under the headroom floor" in row, text
    gated = next(line for line in text.splitlines() if line.strip().startswith("under the"))
    assert "mini-1 (headroom 0.04; yet cleared" in gated, text
    # a cleared node no gate names keeps the plain mark
    clean = msgspec.structs.replace(placement, gated=[], gated_counts={})
    row = next(
        line
        for line in render_pod(explain_pod([clean], "demo/task-680")).splitlines()
        if line.strip().startswith("mini-1")
    )
    assert row.rstrip().endswith("← cleared")
