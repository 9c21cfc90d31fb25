"""The sweep's progress bar (rich): level, phase, estimated time left and the last reading."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from eams.calibrate.sweep import ProgressCallback, SweepProgress


def _status(update: SweepProgress) -> str:
    minutes, seconds = divmod(round(update.time_left_s), 60)
    power = "—" if update.last_power_w is None else f"{update.last_power_w:.1f} W"
    u = "—" if update.last_utilisation is None else f"{update.last_utilisation:.2f}"
    return (
        f"level {update.commanded_pct:>3} % {update.phase:<10} ~{minutes}:{seconds:02d} left  "
        f"last {power}, u {u}"
    )


@contextmanager
def progress_bar(node: str, console: Console | None = None) -> Iterator[ProgressCallback]:
    """Yield a progress callback for :func:`~eams.calibrate.sweep.run_sweep` that draws one bar
    (on stderr by default) for ``node``; the bar is removed when the block ends.

    Drawn only on a terminal: into a pipe or a log a live bar is noise (and rich's live display
    leaves a blank line on stdout when it stops), so there the callback does nothing.
    """
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield lambda _event: None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(node, total=None, status="starting")

        def update(event: SweepProgress) -> None:
            bar.update(task, total=event.count, completed=event.index, status=_status(event))

        yield update
