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
