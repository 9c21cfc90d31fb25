"""``eams bench sweep`` (a manifest's ρ sweep: results, latency, regime plots) and ``eams bench
auction`` (the auction's clearing time against ``linear_sum_assignment``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from eams.scheduler.bench.clearing_time import run_benchmark
from eams.scheduler.bench.manifest import load_manifest
from eams.scheduler.bench.plots import regime_plot
from eams.scheduler.bench.summary import comparisons, evaluate, report_lines
from eams.scheduler.bench.sweep import cells, run_rho_sweep

CSV_COLUMNS = (
    "run",
    "scheduler",
    "power_manager",
    "rho",
    "seed",
    "pods",
    "placed",
    "unschedulable",
    "work_core_s",
    "energy_j",
    "energy_per_work_j_per_core_s",
    "energy_window_j",
    "work_window_core_s",
    "energy_per_work_window_j_per_core_s",
    "p95_completion_s",
    "mean_wait_s",
    "makespan_s",
    "jain",
    "violations",
    "sleeps",
    "wakes",
    "failed_wakes",
    "transitions_per_node_hour",
    "transition_energy_j",
    "asleep_fraction",
    "wake_waited_pods",
    "p95_wake_wait_s",
)


def write_outputs(manifest, results: list[dict], latency: list[dict], out: Path) -> list[Path]:
    """Write ``results.json``, ``results.csv``, ``latency.json``, ``summary.txt`` and the PNGs."""
    out.mkdir(parents=True, exist_ok=True)
    evaluation, compared = evaluate(results), comparisons(results)
    document = {
        "manifest": manifest.model_dump(),
        "results": results,
        "evaluation": evaluation,
        "comparisons": compared,
    }
    (out / "results.json").write_text(json.dumps(document, indent=1, default=str))
    with (out / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(results)
    (out / "latency.json").write_text(json.dumps(latency, indent=1))
    (out / "summary.txt").write_text("\n".join(report_lines(evaluation, compared)) + "\n")
    return regime_plot(results, out, f"{manifest.name}: regime curve")


@click.command()
@click.option(
    "--manifest",
    "manifest_path",
    required=True,
    type=click.Path(path_type=Path),
    help="Sweep manifest (YAML).",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Output folder (created).",
)
@click.option("--workers", type=int, default=None, help="Worker processes (default: manifest).")
def sweep(manifest_path: Path, out_dir: Path, workers: int | None) -> None:
    """Replay a manifest's workload for every scheduler × power-manager mode × ρ × seed (a
    scheduler under the manager is the run ``NAME+pm``); write results.json,
    results.csv, latency.json, summary.txt and regime PNGs to OUT, and print the AR-3/AR-7
    summary. Each finished cell is also appended to OUT/cells.jsonl as it completes."""
    manifest = load_manifest(manifest_path)
    if workers is not None:
        manifest = manifest.model_copy(update={"workers": max(1, workers)})
    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / "cells.jsonl"
    partial.write_text("")

    def done(cell, figures: dict, latency_row: dict) -> None:
        with partial.open("a") as handle:  # kept if the sweep is stopped early
            handle.write(json.dumps({"figures": figures, "latency": latency_row}, default=str))
            handle.write("\n")
        progress.advance(task)

    with Progress(*columns, console=console) as progress:
        task = progress.add_task(f"{manifest.name} cells", total=len(cells(manifest)))
        results, latency = run_rho_sweep(manifest, done)
    plots = write_outputs(manifest, results, latency, out_dir)
    for line in report_lines(evaluate(results), comparisons(results)):
        click.echo(line)
    click.echo(f"results: {out_dir / 'results.json'}; plot: {plots[0]}")


@click.command("auction")
@click.option("--pods", "n_pods", default=500, show_default=True, help="Pods in the batch (J).")
@click.option("--nodes", "n_nodes", default=1000, show_default=True, help="Nodes (N).")
@click.option("--slots", default=8, show_default=True, help="Free slots per node.")
@click.option("--seed", default=0, show_default=True, help="Seed of the random batch.")
@click.option("--repeats", default=50, show_default=True, help="Timed clearings (median, p99).")
@click.option(
    "--lsa-repeats", default=1, show_default=True, help="Timed linear_sum_assignment runs."
)
@click.option(
    "--mask",
    "mask_fraction",
    default=0.0,
    show_default=True,
    help="Fraction of (pod, node) pairs a filter forbids.",
)
@click.option("--cold", is_flag=True, help="No warm start: ε-scaling from zero prices.")
@click.option(
    "--pod-slots",
    "max_pod_slots",
    default=1,
    show_default=True,
    help="Pods need 1..M slots (M > 1: mixed sizes; the reference is then the ε-auction).",
)
@click.option(
    "--method",
    type=click.Choice(["auto", "auction"]),
    default="auto",
    show_default=True,
    help="AuctionParams.method: exact matching first (auto) or the ε-auction only.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def auction(
    n_pods: int,
    n_nodes: int,
    slots: int,
    seed: int,
    repeats: int,
    lsa_repeats: int,
    mask_fraction: float,
    cold: bool,
    max_pod_slots: int,
    method: str,
    as_json: bool,
) -> None:
    """Clear a seeded batch with the engine and compare, in the same run, with scipy's
    linear_sum_assignment on the same values expanded to one column per slot (single-slot
    pods) or with the ε-auction (``--pod-slots`` > 1).

    Prints the median and p99 clearing time (``clear``: bids + auction; ``solve``: auction on
    the value matrix), rounds, the reference's time, the speed-up, and the value gap against
    J·ε (the auction's guarantee). Study budget (§6.1): ≤ 30 ms for 500 × 1,000.
    """
    if (
        min(n_pods, n_nodes, slots, repeats, lsa_repeats, max_pod_slots) < 1
        or not 0 <= mask_fraction < 1
    ):
        raise click.BadParameter("sizes, repeats and --pod-slots must be ≥ 1, --mask in [0, 1)")
    r = run_benchmark(
        n_pods,
        n_nodes,
        slots,
        seed,
        repeats,
        lsa_repeats,
        mask_fraction,
        cold,
        max_pod_slots,
        method,
    )
    if as_json:
        click.echo(json.dumps(r))
        return
    start = "cold" if cold else "warm"
    click.echo(f"batch: {n_pods} pods × {n_nodes} nodes × {slots} slots, seed {seed}")
    click.echo(f"filter mask {mask_fraction}, {start} start, pods of 1–{max_pod_slots} slots")
    for name, key in (("clear (bids + auction)", "clear"), ("solve (auction only)  ", "solve")):
        median, p99, cpu = r[f"{key}_ms_median"], r[f"{key}_ms_p99"], r[f"{key}_cpu_ms_median"]
        click.echo(f"{name}: median {median:.2f} ms, p99 {p99:.2f} ms (CPU median {cpu:.2f} ms)")
    click.echo(
        f"method {r['method']}, rounds {r['rounds']}, phases {r['phases']}, "
        f"converged {r['converged']}, "
        f"fell back {r['fell_back']}, assigned {r['assigned']}"
    )
    lsa, ratio, ratio_cpu = r["lsa_ms_median"], r["speedup_vs_lsa"], r["speedup_vs_lsa_cpu"]
    click.echo(
        f"{r['reference']}: median {lsa:.1f} ms (CPU {r['lsa_cpu_ms_median']:.1f} ms); "
        f"speed-up ×{ratio:.1f} (CPU ×{ratio_cpu:.1f})"
    )
    click.echo(
        f"value {r['value']:.6f} vs reference {r['lsa_value']:.6f}: gap {r['value_gap']:.3g}, "
        f"J·ε {r['j_epsilon']:.3g}, within {r['gap_within_j_epsilon']}, "
        f"certified gap bound {r['gap_bound']}"
    )
