"""The report's figures, returned as PNG bytes.

Built on :class:`matplotlib.figure.Figure` directly (no pyplot, no global backend switch): a
bare Figure renders PNG through the Agg canvas, so this works headless and in threads. Every
error bar is ±2σ, as every ± in the report (:data:`K_SIGMA`).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from eams.calibrate.wallpower.check import RunResult, SavingCheck
from eams.calibrate.wallpower.nodes import NodeEnergy

METERED, MODELLED = "#1f5fa8", "#d9792b"
PASS_BAND = "#c8e6c9"
SLEEP, WAKE = "#6a1b9a", "#2e7d32"
K_SIGMA = 2
"""The coverage factor of every ± and error bar of the report: 2σ (about 95 %)."""
_DPI = 100


def utc(ns: int) -> str:
    """Epoch nanoseconds as readable UTC, to the tenth of a second (``2026-05-01 14:03:07.2
    UTC``)."""
    moment = datetime.fromtimestamp(ns / 1e9, UTC)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 100_000} UTC"


def metered_sd_wh(node: NodeEnergy, accuracy_pct: float) -> float:
    """One node's metered energy standard uncertainty in one run (Wh): sampling, independent
    readings and the outlet's gain error (±a taken as uniform, σ = a/√3, check.py), combined."""
    gain = node.metered_wh * accuracy_pct / 100 / math.sqrt(3)
    return math.hypot(node.metered_sampling_sd_wh, node.metered_reading_sd_wh, gain)


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    return buffer.getvalue()


@dataclass(frozen=True, slots=True)
class PowerMark:
    """A node put to sleep or woken during a run: a mark on the power-over-time plot.

    Attributes
    ----------
    node : str
    at_s : float
        Seconds since the run's start (the plot's time axis).
    kind : {"sleep", "wake"}
    """

    node: str
    at_s: float
    kind: Literal["sleep", "wake"]


MARK_STYLE: dict[str, dict[str, Any]] = {
    "sleep": {"color": SLEEP, "ls": ":", "lw": 1.6, "label": "put to sleep"},
    "wake": {"color": WAKE, "ls": "-.", "lw": 1.6, "label": "woken"},
}
"""How :func:`power_over_time` draws a :class:`PowerMark` of each kind (a vertical line, its
``gid`` the kind)."""


def power_over_time_figure(
    result: SavingCheck, marks: Mapping[str, Sequence[PowerMark]] | None = None
) -> Figure:
    """Per-node metered vs modelled power over time: one row per node, one column per run.

    Gaps in the metered series are shaded grey. ``marks`` (by run label) draw a vertical line
    on the node's row where it was put to sleep or woken (:data:`MARK_STYLE`), with a legend
    entry for each kind drawn.
    """
    marks = marks or {}
    names = list(result.a.nodes)
    fig = Figure(figsize=(11, 1.7 * len(names) + 0.8))
    axes = fig.subplots(len(names), 2, sharey="row", squeeze=False)
    run: RunResult
    drawn: set[str] = set()
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
            for mark in marks.get(run.label, ()):
                if mark.node == name:
                    style = MARK_STYLE[mark.kind]
                    ax.axvline(mark.at_s, color=style["color"], ls=style["ls"], lw=style["lw"],
                               gid=mark.kind)  # fmt: skip
                    drawn.add(mark.kind)
            ax.set_xlim(0, run.duration_s)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel(f"{name}\nW")
            if row == 0:
                ax.set_title(f"run {run.label}, from {utc(run.start_ns)}")
            if row == len(names) - 1:
                ax.set_xlabel("time since run start (s)")
    handles, _ = axes[0][1].get_legend_handles_labels()
    for kind in ("sleep", "wake"):
        if kind in drawn:
            style = MARK_STYLE[kind]
            handles.append(Line2D([], [], color=style["color"], ls=style["ls"], lw=style["lw"],
                                  label=f"node {style['label']}"))  # fmt: skip
    axes[0][1].legend(handles=handles, loc="upper right", fontsize=8)
    title = "Power per node: metered (solid) vs modelled (dashed); grey = gap"
    if drawn:
        title += "; vertical lines: a node put to sleep (dotted) or woken (dash-dot)"
    fig.suptitle(title, y=1.0)
    fig.tight_layout()
    return fig


def power_over_time(
    result: SavingCheck, marks: Mapping[str, Sequence[PowerMark]] | None = None
) -> bytes:
    """:func:`power_over_time_figure` as PNG bytes."""
    return _png(power_over_time_figure(result, marks))


def energy_per_node(result: SavingCheck) -> bytes:
    """Grouped bars: metered and modelled energy per node in each run, metered ±2σ
    (:func:`metered_sd_wh`). PNG bytes."""
    names = list(result.a.nodes)
    x = np.arange(len(names))
    width = 0.2
    fig = Figure(figsize=(11, 4))
    ax = fig.subplots()
    for k, run in enumerate((result.a, result.b)):
        metered = np.array([run.nodes[n].metered_wh for n in names])
        modelled = np.array([run.nodes[n].modelled_wh for n in names])
        sd = np.array([metered_sd_wh(run.nodes[n], result.accuracy_pct) for n in names])
        offset = (2 * k - 1.5) * width
        ax.bar(
            x + offset,
            metered,
            width,
            yerr=K_SIGMA * sd,
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
    ax.set_title("Energy per node (error bars: ±2σ, meter and sampling)")
    ax.legend(ncol=4, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def savings(result: SavingCheck) -> bytes:
    """Top: the metered and the modelled saving, ±2σ. Bottom: their difference D ±2σ and the
    VT-5 pass band |D| ≤ tolerance, drawn on D's row only, exactly as wide as it is. Labels
    carry the text's two decimals. PNG bytes."""
    r = result
    values = np.array([r.saving_metered, r.saving_modelled]) * 100
    sds = np.array(
        [np.linalg.norm(list(r.sd_metered.values())), np.linalg.norm(list(r.sd_modelled.values()))]
    )
    fig = Figure(figsize=(11, 3.6))
    top, bottom = fig.subplots(2, 1, height_ratios=[2, 1])
    top.errorbar(values, [1, 0], xerr=K_SIGMA * sds * 100, fmt="none", capsize=6, color="black")
    for y, v, sd, colour in ((1, values[0], sds[0], METERED), (0, values[1], sds[1], MODELLED)):
        top.plot(v, y, "o", ms=11, color=colour)
        top.annotate(
            f"{v:.2f} % ± {K_SIGMA * sd * 100:.2f}",
            (v, y),
            textcoords="offset points",
            xytext=(0, 10),
            ha="center",
            fontsize=10,
        )
    top.set_yticks([1, 0], ["metered (wall)", "modelled"])
    top.set_ylim(-0.6, 1.7)
    top.axvline(0, color="0.5", lw=0.8)
    top.grid(axis="x", alpha=0.3)
    top.set_xlabel(f"saving of run {r.b.label} over run {r.a.label} (%), ±2σ")
    band = r.tolerance_pts
    bottom.axvspan(-band, band, color=PASS_BAND, zorder=0, label=f"VT-5 pass band: |D| ≤ {band:g}")
    half = K_SIGMA * r.sd_difference_pts
    bottom.errorbar([r.difference_pts], [0], xerr=[half], fmt="o", ms=9, capsize=6, color="black")
    bottom.annotate(
        f"D = {r.difference_pts:+.2f} ± {half:.2f} points",
        (r.difference_pts, 0),
        textcoords="offset points",
        xytext=(0, 9),
        ha="center",
        fontsize=10,
    )
    reach = max(abs(r.difference_pts) + half, band) * 1.15
    bottom.set_xlim(-reach, reach)
    bottom.set_yticks([0], ["metered − modelled"])
    bottom.set_ylim(-0.8, 1.2)
    bottom.axvline(0, color="0.5", lw=0.8)
    bottom.grid(axis="x", alpha=0.3)
    bottom.set_xlabel("difference D (percentage points), ±2σ")
    bottom.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return _png(fig)
