"""``eams agent``: the node daemon (``run``) and its configuration check (``check-config``)."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

import click

from eams.agent.config import load_config
from eams.agent.runner import Agent
from eams.meter.url import parse_meter_url

_CONFIG = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group()
def agent() -> None:
    """Publish age-stamped power headroom of this node (and, on the PDU owner, every node)."""


@agent.command("check-config")
@click.argument("config_file", type=_CONFIG)
def check_config(config_file: Path) -> None:
    """Validate CONFIG_FILE (YAML) completely, including the calibration's node, and print a
    summary. Exit 0 when valid; 1 with one line naming every bad field otherwise."""
    config = load_config(config_file)
    click.echo(
        f"node {config.node}: P_cap {config.power_cap_w:g} W, every {config.sample_period_s:g} s"
    )
    click.echo(f"calibration: {config.calibration or 'none (power metered or missing)'}")
    for name, sink in zip(config.sink_names(), config.sinks, strict=True):
        click.echo(f"sink {name}: {sink.type} {getattr(sink, 'url', getattr(sink, 'path', ''))}")
    click.echo(f"spool: {config.spool.dir} ({config.spool.policy})")
    if config.meter is not None:
        meter = parse_meter_url(config.meter.url).redacted()
        click.echo(f"meter: {meter}; outlets {config.outlet_nodes()}")


@agent.command("run")
@click.option("--config", "config_file", type=_CONFIG, required=True, help="YAML configuration.")
@click.option(
    "--log-level",
    default="INFO",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]),
)
def run(config_file: Path, log_level: str) -> None:
    """Run the agent until SIGTERM or SIGINT, then flush and close every sink and exit 0.

    Samples every ``sample_period_s``, writes to every sink (spooling on failure) and serves
    Prometheus metrics on ``metrics.host:metrics.port``/metrics.
    """
    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_level != "DEBUG":  # httpx logs every request at INFO: one journal line per write
        logging.getLogger("httpx").setLevel(logging.WARNING)
    config = load_config(config_file)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    Agent(config).run(stop)
