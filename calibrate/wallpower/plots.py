"""The report's figures, returned as PNG bytes.

Built on :class:`matplotlib.figure.Figure` directly (no pyplot, no global backend switch): a
bare Figure renders PNG through the Agg canvas, so this works headless and in threads.
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib.figure import Figure

from eams.calibrate.wallpower.check import SavingCheck

METERED, MODELLED = "#1f5fa8", "#d9792b"
_DPI = 100


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    return buffer.getvalue()


def power_over_time(result: SavingCheck) -> bytes:
    """Per-node metered vs modelled power over time: one row per node, one column per run.

    Gaps in the metered series are shaded grey. Returns PNG bytes.
    """
    names = list(result.a.nodes)
    fig = Figure(figsize=(11, 1.7 * len(names) + 0.8))
    axes = fig.subplots(len(names), 2, sharey="row", squeeze=False)
    for col, run in enumerate((result.a, result.b)):
        for row, name in enumerate(names):
            ax, node = axes[row][col], run.nodes[name]
            # each series at its own samples (the owner agent and the node's agent tick apart)
            met, mod = np.isfinite(node.power_w), np.isfinite(node.modelled_w)
            ax.plot(node.t_s[met], node.power_w[met], color=METERED, lw=1.2, label="metered")
            ax.plot(
                node.t_s[mod],
                node.modelled_w[mod],
                color=MODELLED,
                lw=1.2,
                ls="--",
                drawstyle="steps-pre",
                label="modelled (interval means)",
            )
            for gap in node.gaps:
                ax.axvspan(gap.start_s, gap.end_s, color="0.85", zorder=0)
            ax.set_xlim(0, run.duration_s)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel(f"{name}\nW")
            if row == 0:
                ax.set_title(f"run {run.label}")
            if row == len(names) - 1:
                ax.set_xlabel("time since run start (s)")
    axes[0][1].legend(loc="upper right", fontsize=8)
    fig.suptitle("Power per node: metered (solid) vs modelled (dashed); grey = gap", y=1.0)
    fig.tight_layout()
    return _png(fig)


def energy_per_node(result: SavingCheck) -> bytes:
    """Grouped bars: metered and modelled energy per node in each run, metered ±2σ. PNG bytes."""
    names = list(result.a.nodes)
    x = np.arange(len(names))
    width = 0.2
    fig = Figure(figsize=(11, 4))
    ax = fig.subplots()
    for k, run in enumerate((result.a, result.b)):
        metered = np.array([run.nodes[n].metered_wh for n in names])
        modelled = np.array([run.nodes[n].modelled_wh for n in names])
        sd = np.array(
            [
                np.hypot(run.nodes[n].metered_sampling_sd_wh, run.nodes[n].metered_reading_sd_wh)
                for n in names
            ]
        )
        gain = metered * result.accuracy_pct / 100 / np.sqrt(3)
        offset = (2 * k - 1.5) * width
        ax.bar(
            x + offset,
            metered,
            width,
            yerr=2 * np.hypot(sd, gain),
            capsize=3,
            color=METERED,
            alpha=1.0 if k == 0 else 0.55,
            label=f"{run.label} metered",
        )
        ax.bar(
            x + offset + width,
            modelled,
            width,
            color=MODELLED,
            alpha=1.0 if k == 0 else 0.55,
            label=f"{run.label} modelled",
        )
    ax.set_xticks(x, names)
    ax.set_ylabel("energy over the run (Wh)")
    ax.set_title("Energy per node (error bars: ±2σ meter and sampling)")
    ax.legend(ncol=4, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def savings(result: SavingCheck) -> bytes:
    """The metered and the modelled saving with ±2σ error bars, and the VT-5 band. PNG bytes."""
    values = np.array([result.saving_metered, result.saving_modelled]) * 100
    sds = (
        np.array(
            [
                np.linalg.norm(list(result.sd_metered.values())),
                np.linalg.norm(list(result.sd_modelled.values())),
            ]
        )
        * 100
    )
    fig = Figure(figsize=(11, 2.6))
    ax = fig.subplots()
    band = result.tolerance_pts
    ax.axvspan(
        values[1] - band,
        values[1] + band,
        color="#c8e6c9",
        zorder=0,
        label=f"modelled ± {band:g} points (VT-5 pass band)",
    )
    ax.errorbar(values, [1, 0], xerr=2 * sds, fmt="o", ms=9, capsize=6, color="black")
    for y, v, colour in ((1, values[0], METERED), (0, values[1], MODELLED)):
        ax.plot(v, y, "o", ms=11, color=colour)
        ax.annotate(
            f"{v:.1f} %",
            (v, y),
            textcoords="offset points",
            xytext=(0, 10),
            ha="center",
            fontsize=10,
        )
    ax.set_yticks([1, 0], ["metered (wall)", "modelled"])
    ax.set_ylim(-0.6, 1.7)
    ax.set_xlabel(f"saving of run {result.b.label} over run {result.a.label} (%), ±2σ")
    ax.axvline(0, color="0.5", lw=0.8)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)
