"""``eams bench sweep`` (a manifest's ρ sweep: results, latency, regime plots) and ``eams bench
auction`` (the auction against the solvers a user would pick instead, on the same batches)."""

from __future__ import annotations

import csv
import json
from contextlib import nullcontext
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

from eams.cli import ValueType
from eams.scheduler.auction import Method
from eams.scheduler.bench.auction_batches import KINDS
from eams.scheduler.bench.checkpoint import CellLog
from eams.scheduler.bench.clearing_time import compare
from eams.scheduler.bench.engine import open_client
from eams.scheduler.bench.manifest import load_manifest
from eams.scheduler.bench.plots import regime_plot
from eams.scheduler.bench.summary import comparisons, evaluate, report_lines
from eams.scheduler.bench.sweep import cells, run_rho_sweep

_COUNT = click.IntRange(min=1)


def _budgets(text: str) -> tuple[float, ...]:
    """``--budgets``: comma-separated seconds, each finite and > 0 (``''``: none)."""
    try:
        budgets = tuple(float(b) for b in text.split(",") if b.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a comma-separated list of seconds") from None
    bad = [b for b in budgets if not 0 < b < float("inf")]
    if bad:
        raise ValueError(f"{bad[0]:g} s: each budget must be a finite number of seconds > 0")
    return budgets


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
    "p95_wait_s",
    "makespan_s",
    "jain",
    "violations",
    "sleeps",
    "wakes",
    "market_wakes",
    "failed_wakes",
    "transitions_per_node_hour",
    "transition_energy_j",
    "asleep_fraction",
    "wake_waited_pods",
    "p95_wake_wait_s",
    "market_held_pods",
)


def write_outputs(manifest, results: list[dict], latency: list[dict], out: Path) -> list[Path]:
    """Write ``results.json``, ``results.csv``, ``latency.json``, ``summary.txt`` and the PNGs.

    ``results.json`` holds the manifest without ``workers`` (how the cells were run, not what
    they give): the same manifest gives the same file whatever the workers or the cluster."""
    out.mkdir(parents=True, exist_ok=True)
    evaluation, compared = evaluate(results), comparisons(results)
    document = {
        "manifest": manifest.model_dump(exclude={"workers"}),
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
    help="Output folder (created); a sweep stopped into it resumes.",
)
@click.option(
    "--workers",
    type=_COUNT,
    default=None,
    help="Worker processes of the local Dask cluster (default: the manifest's workers).",
)
@click.option(
    "--cluster",
    "address",
    envvar="DASK_SCHEDULER_ADDRESS",
    show_envvar=True,
    default=None,
    metavar="ADDRESS",
    help="Run the cells on the Dask scheduler at ADDRESS (tcp://HOST:PORT) and its workers "
    "instead of a local cluster.",
)
def sweep(manifest_path: Path, out_dir: Path, workers: int | None, address: str | None) -> None:
    """Replay a manifest's workload for every scheduler × power-manager mode × ρ × seed (a
    scheduler under the manager is the run ``NAME+pm``); write results.json,
    results.csv, latency.json, summary.txt and regime PNGs to OUT, and print the AR-3/AR-7
    summary.

    The cells run on Dask distributed: a local cluster of worker processes by default, or the
    cluster whose scheduler is at ``--cluster`` (each of its workers needs eams with the bench
    extra and the data folder, ``EAMS_DATA_DIR``). Each finished cell is appended to
    OUT/cells.jsonl as it completes; run again into the same OUT, a stopped sweep runs only the
    cells still missing (the file must come from the same manifest; the number of workers and
    the cluster may differ)."""
    manifest = load_manifest(manifest_path)
    if address and workers is not None:
        raise click.UsageError("--workers sizes the local cluster; --cluster has its own workers")
    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    log = CellLog(out_dir, manifest)
    done = log.load()
    total = len(cells(manifest))
    if done:
        console.print(f"resuming: {len(done)} of {total} cells already in {log.path}")

    def finished(cell, figures: dict, latency_row: dict) -> None:
        log.append(figures, latency_row)
        progress.advance(task)

    engine = open_client(address, workers or manifest.workers) if len(done) < total else None
    with Progress(*columns, console=console) as progress, engine or nullcontext() as client:
        task = progress.add_task(f"{manifest.name} cells", total=total, completed=len(done))
        results, latency = run_rho_sweep(manifest, finished, client, done)
    plots = write_outputs(manifest, results, latency, out_dir)
    for line in report_lines(evaluate(results), comparisons(results)):
        click.echo(line)
    click.echo(f"results: {out_dir / 'results.json'}; plot: {plots[0]}")


@click.command("auction")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(sorted(KINDS)),
    help="Batch kind (repeatable; default: all of them).",
)
@click.option(
    "--pods", "n_pods", default=500, show_default=True, type=_COUNT, help="Pods in the batch (J)."
)
@click.option("--nodes", "n_nodes", default=1000, show_default=True, type=_COUNT, help="Nodes (N).")
@click.option("--slots", default=8, show_default=True, type=_COUNT, help="Free slots per node.")
@click.option("--seed", default=0, show_default=True, help="Seed of the batch.")
@click.option(
    "--repeats", default=20, show_default=True, type=_COUNT, help="Timed clearings (median, p99)."
)
@click.option(
    "--budgets",
    "budgets_s",
    default="0.05,0.2,1",
    show_default=True,
    type=ValueType(_budgets, "SECONDS,..."),
    help="CP-SAT / HiGHS MILP budgets in seconds, comma-separated ('' skips them).",
)
@click.option("--no-lsa", is_flag=True, help="Skip the linear_sum_assignment sanity check.")
@click.option(
    "--method",
    type=click.Choice(["auto", *Method]),
    default="auto",
    show_default=True,
    help="AuctionParams.method of the engine.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per kind.")
def auction(
    kinds: tuple[str, ...],
    n_pods: int,
    n_nodes: int,
    slots: int,
    seed: int,
    repeats: int,
    budgets_s: tuple[float, ...],
    no_lsa: bool,
    method: str,
    as_json: bool,
) -> None:
    """Clear seeded batches with the engine and, in the same run, with the solvers a user
    would pick instead: OR-tools min-cost flow (single-slot pods: the exact optimum; mixed
    sizes: the LP bound), CP-SAT and HiGHS MILP with each budget (mixed sizes), and
    linear_sum_assignment as a sanity check.

    Prints per kind the engine's CPU median and p99 (``clear``: bids + clearing), its value
    and certificate (J·ε or gap_bound), each reference's time, value and bound, and the
    engine's distance to the best bound any of them proved. Study budget (§6.1): ≤ 30 ms for
    500 × 1,000.
    """
    for kind in kinds or tuple(KINDS):
        r = compare(kind, n_pods, n_nodes, slots, seed, repeats, budgets_s, not no_lsa, method)
        if as_json:
            click.echo(json.dumps(r))
            continue
        e = r["eams"]
        click.echo(
            f"{kind}: {n_pods} pods × {n_nodes} nodes, {r['pod_slots_total']} slots asked, "
            f"{r['free_slots_total']} free, seed {seed} (load {r['load_avg'][0]:.1f})"
        )
        if r["pods_that_fit"] == 0:
            click.echo("  no pod fits any node: nothing to place, value 0")
        certificate = (
            f"gap_bound {e['gap_bound']:.4g}" if e["gap_bound"] is not None else "within J·ε"
        )
        click.echo(
            f"  eams {e['method']}: clear CPU median {e['clear_cpu_ms_median']:.1f} ms, "
            f"p99 {e['clear_cpu_ms_p99']:.1f} ms; value {e['value']:.4f}, {certificate} "
            f"(J·ε {e['j_epsilon']:.3g})"
        )
        for s in r["references"]:
            value = "no solution" if s["value"] is None else f"value {s['value']:.4f}"
            bound = "no bound" if s["bound"] is None else f"bound {s['bound']:.4f}"
            click.echo(
                f"  {s['solver']}: build {s['build_ms']:.0f} ms, solve {s['solve_ms']:.0f} ms "
                f"(CPU {s['solve_cpu_ms']:.0f} ms); {value}, {bound}"
            )
        click.echo(
            f"  best bound {r['best_bound']:.4f} ({r['best_bound_by']}): eams "
            f"{r['gap_to_best_bound_pct']:.2f} % below it"
        )
