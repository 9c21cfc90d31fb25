"""Regime plots: energy per unit work vs ρ and p95 completion time vs ρ, one line per run
(mean over seeds) with a band from the lowest to the highest seed (matplotlib, Agg).

``regime.png`` has one column without the power manager and one with it (rows: energy, p95;
each row on one y scale, so the columns compare); ``regime_energy.png`` and ``regime_p95.png``
draw every run on one panel, a scheduler in one colour, solid without the manager and dashed
with it.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from eams.scheduler.bench.summary import ENERGY, MANAGED, run_of

PANELS = (
    (ENERGY, "energy per work in the arrival window (J per core-s)"),
    ("p95_completion_s", "p95 completion time (s)"),
)


def regime_plot(results: list[dict], out: Path, title: str) -> list[Path]:
    """Write ``regime.png`` (without | with the manager), ``regime_energy.png`` and
    ``regime_p95.png`` (every run) to ``out``; returns their paths."""
    schedulers = list(dict.fromkeys(r["scheduler"] for r in results))
    colours = {s: f"C{i % 10}" for i, s in enumerate(schedulers)}
    managed = [r for r in results if run_of(r).endswith(MANAGED)]
    plain = [r for r in results if not run_of(r).endswith(MANAGED)]
    columns = [
        (rows, name)
        for rows, name in ((plain, "no power manager"), (managed, "power manager"))
        if rows
    ]
    fig, axes = plt.subplots(2, len(columns), figsize=(6.5 * len(columns), 9), squeeze=False)
    for row, (key, label) in enumerate(PANELS):
        for col, (rows, name) in enumerate(columns):
            _draw(rows, key, label, axes[row][col], colours)
            axes[row][col].set_title(name)
        _share_y(axes[row])
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out / "regime.png", dpi=110)
    plt.close(fig)
    paths = [out / "regime.png"]
    for key, label in PANELS:
        fig, ax = plt.subplots(figsize=(8, 5.5))
        _draw(results, key, label, ax, colours)
        ax.set_title(title)
        name = "regime_energy.png" if key.startswith("energy") else "regime_p95.png"
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        paths.append(out / name)
    return paths


def _share_y(axes) -> None:
    lows, highs = zip(*(ax.get_ylim() for ax in axes), strict=True)
    for ax in axes:
        ax.set_ylim(min(lows), max(highs))


def _draw(results: list[dict], key: str, label: str, ax, colours: dict[str, str]) -> None:
    by: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    scheduler_of = {}
    for row in results:
        if row[key] is not None:
            by[run_of(row)][row["rho"]].append(row[key])
            scheduler_of[run_of(row)] = row["scheduler"]
    for run, series in by.items():
        rhos = sorted(series)
        values = [np.asarray(series[r]) for r in rhos]
        colour = colours[scheduler_of[run]]
        style = "--" if run.endswith(MANAGED) else "-"
        ax.plot(rhos, [v.mean() for v in values], style, marker="o", color=colour, label=run)
        low, high = [v.min() for v in values], [v.max() for v in values]
        ax.fill_between(rhos, low, high, color=colour, alpha=0.08)
    ax.axvspan(0.7, 1.0, color="grey", alpha=0.1)
    ax.set_xlabel("offered load ρ")
    ax.set_ylabel(label)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
