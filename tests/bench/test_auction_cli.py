"""``eams bench auction`` runs end to end and reports its figures."""

import json

from click.testing import CliRunner

from eams.cli import cli


def test_bench_auction_json_reports_times_ratio_and_gap() -> None:
    args = [
        "bench",
        "auction",
        "--pods",
        "40",
        "--nodes",
        "30",
        "--slots",
        "2",
        "--repeats",
        "3",
        "--json",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["pods"] == 40 and figures["assigned"] == 40
    assert figures["solve_ms_median"] > 0 and figures["lsa_ms_median"] > 0
    assert figures["speedup_vs_lsa"] == figures["lsa_ms_median"] / figures["solve_ms_median"]
    assert figures["gap_within_j_epsilon"] and figures["value_gap"] <= figures["j_epsilon"]


def test_bench_auction_text_and_bad_sizes() -> None:
    runner = CliRunner()
    text = runner.invoke(
        cli, ["bench", "auction", "--pods", "20", "--nodes", "10", "--slots", "2", "--repeats", "2"]
    )
    assert text.exit_code == 0 and "linear_sum_assignment" in text.output and "J·ε" in text.output
    bad = runner.invoke(cli, ["bench", "auction", "--pods", "0"])
    assert bad.exit_code == 2


def test_bench_auction_mixed_pod_sizes_against_the_auction() -> None:
    args = ["bench", "auction", "--pods", "30", "--nodes", "20", "--slots", "4"]
    args += ["--pod-slots", "3", "--mask", "0.2", "--repeats", "2", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["max_pod_slots"] == 3 and figures["reference"].startswith("auction")
    assert figures["method"] == "relaxation"
    assert figures["gap_bound"] is not None and figures["gap_bound"] >= 0
    auction = CliRunner().invoke(cli, [*args[:-1], "--method", "auction", "--json"])
    assert json.loads(auction.output)["method"].startswith("auction")
