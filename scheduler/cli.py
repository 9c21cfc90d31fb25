"""``eams extender`` and ``eams bench``."""

import click

from eams.scheduler.bench.cli import auction, sweep
from eams.scheduler.extender.cli import fallback, serve


@click.group()
def extender() -> None:
    """Serve the ε-auction to kube-scheduler over the extender protocol."""


@click.group()
def bench() -> None:
    """Benchmarks: the auction engine, and trace replay against baseline schedulers."""


bench.add_command(auction)
bench.add_command(sweep)
extender.add_command(serve)
extender.add_command(fallback)
