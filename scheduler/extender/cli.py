"""``eams extender serve``: run the extender under uvicorn."""

from __future__ import annotations

import gc
from pathlib import Path

import click

from eams.scheduler.extender.settings import Settings


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8888, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--mode",
    type=click.Choice(["shadow", "active"]),
    default="shadow",
    show_default=True,
    help="shadow: neutral answers, recommendations recorded; active: serve the auction.",
)
@click.option(
    "--calibrations",
    "calibrations_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Folder of per-node calibration files (NAME.json); needed for readiness.",
)
@click.option(
    "--window-ms",
    default=200.0,
    show_default=True,
    type=float,
    help="Batch window W, ms (0: none).",
)
@click.option(
    "--watch/--no-watch",
    default=False,
    show_default=True,
    help="Watch nodes and pods on the API server (in-cluster account, else KUBECONFIG).",
)
@click.option("--log-level", default="info", show_default=True, help="uvicorn log level.")
def serve(
    host: str,
    port: int,
    mode: str,
    calibrations_dir: Path | None,
    window_ms: float,
    watch: bool,
    log_level: str,
) -> None:
    """Serve /filter and /prioritize to kube-scheduler (extender v1), plus /telemetry,
    /healthz, /readyz and /metrics.

    \f
    Raises
    ------
    ExtenderConfigError
        A bad setting or calibration file (printed as one line by the ``eams`` command).
    """
    import uvicorn

    from eams.scheduler.extender.app import create_app
    from eams.scheduler.extender.watch import start_watch

    settings = Settings(mode=mode, window_ms=window_ms, calibrations_dir=calibrations_dir)
    app = create_app(settings, on_startup=start_watch if watch else None)
    # Everything loaded so far (FastAPI, pydantic, numpy/scipy, calibrations) lives as long as
    # the process: frozen out of the collector's sight, a full collection no longer walks it on
    # the request path (the tail of /filter and /prioritize). Collected first so no garbage
    # is frozen with it.
    gc.collect()
    gc.freeze()
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)


if __name__ == "__main__":  # ``python -m eams.scheduler.extender.cli``: no other component loads
    serve()
