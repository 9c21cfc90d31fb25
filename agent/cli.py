"""``eams agent``: the node daemon (``run``) and its configuration check (``check-config``)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import click

from eams.agent import stop
from eams.agent.config import load_config
from eams.agent.runner import Agent
from eams.cli import configure_logging, log_level_option
from eams.meter.url import parse_meter_url

log = logging.getLogger(__name__)

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
        where = getattr(sink, "url", None) or getattr(sink, "path", "")
        click.echo(
            f"sink {name}: {where}" if name == sink.type else f"sink {name} ({sink.type}): {where}"
        )
    click.echo(f"spool: {config.spool.dir} ({config.spool.policy})")
    if config.meter is not None:
        meter = parse_meter_url(config.meter.url).redacted()
        outlets = ", ".join(
            f"{outlet} {node} (P_cap {cap_w:g} W)"
            for outlet, (node, cap_w) in sorted(config.outlet_nodes().items())
        )
        click.echo(f"meter: {meter}; outlets {outlets}")


@agent.command("run")
@click.option("--config", "config_file", type=_CONFIG, required=True, help="YAML configuration.")
@log_level_option("Log level (DEBUG also logs every HTTP request of the sinks).")
def run(config_file: Path, log_level: str) -> None:
    """Run the agent until SIGTERM or SIGINT, then flush and close every sink and exit 0.

    Samples every `sample_period_s` of the configuration, writes to every sink (spooling on
    failure) and serves Prometheus metrics on http://METRICS_HOST:METRICS_PORT/metrics. A
    signal that arrives while the agent starts is a stop too: exit 0, without starting when
    the configuration is still being read.

    \f
    The stop request is :mod:`eams.agent.stop`.
    """
    requested = stop.install()  # again for `eams agent run`; python -m eams.agent did it first
    configure_logging(log_level, "%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = load_config(config_file)
    if requested.is_set():
        log.info("stop requested while starting: not started")
        return
    runner = Agent(config)
    # The agent runs in a thread and the main thread only joins it: Python runs signal
    # handlers in the main thread, and the handler's Event.set() would deadlock if the main
    # thread itself held that event's lock (inside Event.wait) when the signal came.
    failure: list[BaseException] = []
    thread = threading.Thread(target=_run_agent, args=(runner, requested, failure), name="agent")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def _run_agent(runner: Agent, requested: threading.Event, failure: list[BaseException]) -> None:
    try:
        runner.run(requested)
    except BaseException as exc:  # re-raised in the main thread (an EamsError is one line)
        failure.append(exc)
