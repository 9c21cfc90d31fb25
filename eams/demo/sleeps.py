"""Why a power-managed run's saving differs between repeats: the nodes its manager slept.

In the demo's workload a node stays empty for a few seconds at a time, and the power manager
sleeps it only once it has been empty past its break-even, which rests on the node's wake
energy as measured (:func:`eams.scheduler.power.policy_costs.break_even_s`). Every repeat
measures the power states afresh, so a node whose break-even sits near how long it stays
empty sleeps in some repeats and not in others, and its run's saving moves with it (issue 35:
default+pm saved 5.2, 4.0 and 13.9 % in three repeats; mini-3, whose hidden wake is 212 J,
measured 268, 217 and 205 J and slept only in the third). :func:`sleeps_text` names such
nodes, run by run, with the wake energies each repeat measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from eams.calibrate.calfile import load_calibration
from eams.calibrate.powerstates.record import Estimate
from eams.calibrate.wallpower.plots import PowerMark


def slept(marks: Mapping[str, Sequence[PowerMark]]) -> dict[str, frozenset[str]]:
    """Run label → the nodes its manager put to sleep, from one repeat's power marks
    (:func:`eams.demo.report.power_marks`: the transitions that went through)."""
    return {
        label: frozenset(m.node for m in ms if m.kind == "sleep") for label, ms in marks.items()
    }


def wake_energies(calibration_dir: Path) -> dict[str, Estimate]:
    """Node → its measured wake energy (J), from the calibration files in ``calibration_dir``
    (``<node>.json``) that have power states: the wake from suspend where the node suspends,
    else its boot. Subfolders (other repeats' files) are not read.

    Raises
    ------
    CalibrationFileError
        A file there is not a valid calibration (it names the file and the field).
    """
    out = {}
    for path in sorted(calibration_dir.glob("*.json")):
        states = load_calibration(path).power_states
        cost = None if states is None else (states.wake or states.boot)
        if cost is not None:
            out[path.stem] = cost.energy_j
    return out


def _numbers(indices: Sequence[int]) -> str:
    """``2``, ``1 and 3``, ``1, 2 and 4``."""
    words = [str(i) for i in indices]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def sleeps_text(
    per_repeat: Sequence[Mapping[str, frozenset[str]]],
    wake_j: Sequence[Mapping[str, Estimate]],
) -> str | None:
    """One sentence on the nodes a run's manager slept in some repeats and not in others, with
    each such node's wake energy as every repeat measured it; ``None`` with one repeat, or when
    every run slept the same nodes in every repeat.

    Parameters
    ----------
    per_repeat : sequence of mapping of str to frozenset of str, one per repeat
        Run label → the nodes its manager slept (:func:`slept`); runs without a manager have
        none in any repeat and are never named.
    wake_j : sequence of mapping of str to Estimate, one per repeat
        Node → its measured wake energy (J) in that repeat's calibration files; a node missing
        there is named without its figures.

    Raises
    ------
    ValueError
        ``wake_j`` and ``per_repeat`` differ in length.
    """
    if len(per_repeat) < 2:
        return None
    if len(wake_j) != len(per_repeat):
        raise ValueError(f"{len(wake_j)} repeats of wake energies for {len(per_repeat)} repeats")
    runs, nodes = [], []
    labels = dict.fromkeys(label for repeat in per_repeat for label in repeat)
    for label in labels:
        sets = [repeat.get(label, frozenset()) for repeat in per_repeat]
        changing = sorted(frozenset.union(*sets) - frozenset.intersection(*sets))
        if not changing:
            continue
        which = []
        for node in changing:
            yes = [i for i, s in enumerate(sets, start=1) if node in s]
            no = [i for i, s in enumerate(sets, start=1) if node not in s]
            plural = "s" * (len(yes) > 1)
            which.append(f"{node} in repeat{plural} {_numbers(yes)} (not in {_numbers(no)})")
        runs.append(f"{label} slept {', '.join(which)}")
        nodes += [node for node in changing if node not in nodes]
    if not runs:
        return None
    figures = []
    for node in nodes:
        measured = [repeat.get(node) for repeat in wake_j]
        if any(e is None for e in measured):
            continue
        each = " / ".join(
            f"{e.value:.0f} [{e.ci95[0]:.0f}, {e.ci95[1]:.0f}]" for e in measured if e is not None
        )
        figures.append(f"{node} {each} J")
    measured_text = f": {'; '.join(figures)}" if figures else ""
    return (
        f"The power manager slept different nodes in different repeats: {'; '.join(runs)}. It "
        "sleeps a node once the node has been empty past its break-even, the energy of a "
        "sleep and a wake over the idle draw it saves (the wake as each repeat measured "
        f"it{measured_text}): a node whose "
        "empty spells and break-even are close sleeps in some repeats and not in others (a "
        "spell a little longer, or a wake measured a little lower, decides it), and its run's "
        "saving moves with it."
    )
