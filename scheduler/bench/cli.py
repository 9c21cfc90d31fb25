"""``eams bench sweep``: run a manifest's ρ sweep and write results, latency and regime plots."""

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

from eams.scheduler.bench.manifest import load_manifest
from eams.scheduler.bench.plots import regime_plot
from eams.scheduler.bench.summary import evaluate, report_lines
from eams.scheduler.bench.sweep import cells, run_sweep

CSV_COLUMNS = (
    "scheduler",
    "rho",
    "seed",
    "pods",
    "placed",
    "unschedulable",
    "work_core_s",
    "energy_j",
    "energy_per_work_j_per_core_s",
    "p95_completion_s",
    "mean_wait_s",
    "makespan_s",
    "jain",
    "violations",
)


def write_outputs(manifest, results: list[dict], latency: list[dict], out: Path) -> list[Path]:
    """Write ``results.json``, ``results.csv``, ``latency.json``, ``summary.txt`` and the PNGs."""
    out.mkdir(parents=True, exist_ok=True)
    evaluation = evaluate(results)
    (out / "results.json").write_text(
        json.dumps(
            {"manifest": manifest.model_dump(), "results": results, "evaluation": evaluation},
            indent=1,
            default=str,
        )
    )
    with (out / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(results)
    (out / "latency.json").write_text(json.dumps(latency, indent=1))
    (out / "summary.txt").write_text("\n".join(report_lines(evaluation)) + "\n")
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
    """Replay a manifest's workload for every scheduler × ρ × seed; write results.json,
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
        results, latency = run_sweep(manifest, done)
    plots = write_outputs(manifest, results, latency, out_dir)
    for line in report_lines(evaluate(results)):
        click.echo(line)
    click.echo(f"results: {out_dir / 'results.json'}; plot: {plots[0]}")
