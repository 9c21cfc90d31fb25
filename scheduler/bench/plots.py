"""Regime plots: energy per unit work vs ρ and p95 completion time vs ρ, one line per
scheduler (mean over seeds) with a band from the lowest to the highest seed (matplotlib, Agg)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

PANELS = (
    ("energy_per_work_j_per_core_s", "energy per unit work (J per reference core-second)"),
    ("p95_completion_s", "p95 completion time (s)"),
)


def regime_plot(results: list[dict], out: Path, title: str) -> list[Path]:
    """Write ``regime_energy.png``, ``regime_p95.png`` and ``regime.png`` (both panels) to
    ``out``; returns their paths."""
    paths = []
    fig_both, axes = plt.subplots(1, 2, figsize=(13, 5))
    for (key, label), ax_both in zip(PANELS, axes, strict=True):
        fig, ax = plt.subplots(figsize=(7, 5))
        for target in (ax, ax_both):
            _draw(results, key, label, target)
        ax.set_title(title)
        name = "regime_energy.png" if key.startswith("energy") else "regime_p95.png"
        fig.tight_layout()
        fig.savefig(out / name, dpi=120)
        plt.close(fig)
        paths.append(out / name)
    fig_both.suptitle(title)
    fig_both.tight_layout()
    fig_both.savefig(out / "regime.png", dpi=120)
    plt.close(fig_both)
    return [out / "regime.png", *paths]


def _draw(results: list[dict], key: str, label: str, ax) -> None:
    by: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in results:
        if row[key] is not None:
            by[row["scheduler"]][row["rho"]].append(row[key])
    for scheduler, series in by.items():
        rhos = sorted(series)
        values = [np.asarray(series[r]) for r in rhos]
        mean = [v.mean() for v in values]
        line = ax.plot(rhos, mean, marker="o", label=scheduler)[0]
        ax.fill_between(
            rhos,
            [v.min() for v in values],
            [v.max() for v in values],
            color=line.get_color(),
            alpha=0.2,
        )
    ax.axvspan(0.7, 1.0, color="grey", alpha=0.1)
    ax.set_xlabel("offered load ρ")
    ax.set_ylabel(label)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
