"""``eams bench auction`` runs end to end and reports the engine against the reference solvers
on the same batch: the exact min-cost flow for single-slot pods, CP-SAT / HiGHS MILP and the
LP bound for mixed sizes."""

import json

from click.testing import CliRunner

from eams.cli import cli

SMALL = ["--pods", "40", "--nodes", "30", "--slots", "3", "--repeats", "2"]


def test_single_slot_kinds_are_exact_against_the_flow_and_lsa() -> None:
    args = ["bench", "auction", "--kind", "cold", "--kind", "filtered", *SMALL, "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["kind"] for r in rows] == ["cold", "filtered"]
    for r in rows:
        solvers = [s["solver"] for s in r["references"]]
        assert solvers == ["or-tools min-cost flow", "linear_sum_assignment"]
        flow, lsa = r["references"]
        assert abs(flow["value"] - lsa["value"]) <= 1e-6 * lsa["value"]  # two exact solvers
        assert (
            r["within_j_epsilon"] and r["eams"]["value"] >= flow["value"] - r["eams"]["j_epsilon"]
        )
        assert r["eams"]["method"] in ("matching", "linear_sum_assignment")  # small and cold: LSA
        assert r["eams"]["clear_cpu_ms_median"] > 0
        assert r["gap_to_best_bound_pct"] <= 100 * r["eams"]["j_epsilon"] / r["best_bound"]
        assert r["speedup_vs_flow_cpu"] > 0 and r["versions"]["ortools"]


def test_mixed_sizes_against_cp_sat_highs_and_the_lp_bound() -> None:
    args = ["bench", "auction", "--kind", "mixed-filtered", *SMALL, "--budgets", "0.2", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    r = json.loads(result.output)
    solvers = [s["solver"] for s in r["references"]]
    assert solvers == ["or-tools min-cost flow (LP relaxation)", "cp-sat 0.2 s", "highs milp 0.2 s"]
    e = r["eams"]
    assert e["method"] == "relaxation" and e["gap_bound"] is not None
    lp = r["references"][0]["bound"]
    own = e["value"] + e["gap_bound"]
    assert own >= lp * (1 - 1e-9)  # the LP optimum is the lowest bound prices can give
    for s in r["references"][1:]:  # whatever a MILP solver found is feasible: ≤ every bound
        if s["value"] is not None:
            assert s["value"] <= lp * (1 + 1e-9) and s["value"] <= own * (1 + 1e-9)
    assert r["best_bound"] <= min(lp, own) + 1e-12
    assert 0 <= r["gap_to_best_bound_pct"] < 100


def test_text_output_and_bad_options() -> None:
    runner = CliRunner()
    text = runner.invoke(cli, ["bench", "auction", "--kind", "warm", *SMALL, "--no-lsa"])
    assert text.exit_code == 0, text.output
    assert "or-tools min-cost flow" in text.output and "within J·ε" in text.output
    assert "linear_sum_assignment" not in text.output
    assert runner.invoke(cli, ["bench", "auction", "--pods", "0"]).exit_code == 2
    assert runner.invoke(cli, ["bench", "auction", "--budgets", "x"]).exit_code == 2
    assert runner.invoke(cli, ["bench", "auction", "--kind", "nope"]).exit_code == 2


def test_a_batch_where_no_pod_fits_reports_value_0_not_a_traceback() -> None:
    # One node with 1 free slot, one mixed-size pod asking more: no allowed pair, so the MILP
    # has no variables (scipy's milp refused it) and the best bound is 0 (it divided by it).
    runner = CliRunner()
    tiny = ["bench", "auction", "--kind", "mixed", "--pods", "1", "--nodes", "1", "--slots", "1"]
    for budgets in ("0.05", ""):
        result = runner.invoke(cli, [*tiny, "--repeats", "1", "--budgets", budgets, "--json"])
        assert result.exit_code == 0, result.output
        r = json.loads(result.output)
        assert r["pods_that_fit"] == 0 and r["pod_slots_total"] > r["free_slots_total"]
        assert r["eams"]["value"] == 0 and r["best_bound"] == 0
        assert r["gap_to_best_bound_pct"] == 0
        for s in r["references"]:
            assert s["bound"] == 0  # the empty model is not solved: its optimum is 0
            assert s["value"] in (None, 0)
        assert len(r["references"]) == (3 if budgets else 1)
    text = runner.invoke(cli, [*tiny, "--repeats", "1", "--budgets", "0.05"])
    assert text.exit_code == 0, text.output
    assert "no pod fits any node" in text.output and "eams 0.00 % below it" in text.output


def test_a_missing_trace_says_how_to_point_at_the_data(tmp_path, monkeypatch) -> None:
    # A clone outside the development layout: the data folder is empty or absent.
    monkeypatch.setenv("EAMS_DATA_DIR", str(tmp_path))
    args = ["bench", "auction", "--kind", "trace-openb", "--pods", "5", "--nodes", "5"]
    result = CliRunner().invoke(cli, [*args, "--repeats", "1"])
    message = str(result.exception)
    assert result.exit_code != 0 and "cannot read trace" in message
    assert f"the data folder is {tmp_path} ($EAMS_DATA_DIR): set EAMS_DATA_DIR" in message


def test_the_hint_names_the_default_folder_and_only_for_its_missing_files(
    tmp_path, monkeypatch
) -> None:
    from eams.datasets import data_dir, missing_hint

    monkeypatch.delenv("EAMS_DATA_DIR", raising=False)
    assert "(the default, ../shared/data): set EAMS_DATA_DIR" in missing_hint(
        data_dir() / "no-such-file.csv"
    )
    assert missing_hint(tmp_path / "elsewhere.csv") == ""  # a path given outside the folder
