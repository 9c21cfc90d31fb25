"""Where the real reference data lives (``../shared/data`` in the development layout).

One setting finds it: the environment variable ``EAMS_DATA_DIR``, defaulting to
``../shared/data`` relative to the repository root. A reader that cannot open a file of it adds
:func:`missing_hint` to its error, so a clone elsewhere is told how to point at the data.
Tests of the data tier skip with a clear reason only when the folder is absent; ``.ci/run``
refuses to run without it.
"""

import os
from pathlib import Path

DATA_DIR_ENV = "EAMS_DATA_DIR"
_REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Return the configured data directory (it may not exist).

    Returns
    -------
    Path
        ``$EAMS_DATA_DIR`` when set, else ``<repo>/../shared/data``.
    """
    configured = os.environ.get(DATA_DIR_ENV)
    return Path(configured) if configured else _REPO_ROOT.parent / "shared" / "data"


def data_file(relative: str) -> Path | None:
    """Return ``data_dir() / relative`` if that file or folder exists, else ``None``.

    Callers that can run without the file (the demo) use ``None`` to fall back to built-in
    defaults and say which file they wanted.
    """
    path = data_dir() / relative
    return path if path.exists() else None


def not_found(relative: str) -> str:
    """Say which data file is missing, where it was looked for and how to point at it (for a
    caller that falls back, as the demo does, next to :func:`data_file`).

    Parameters
    ----------
    relative : str
        The file's path inside the data folder (e.g. ``specpower/...csv``).
    """
    return (
        f"{relative} not found in {data_dir()} (set {DATA_DIR_ENV} to the folder that holds "
        "the shared data)"
    )


def missing_hint(path: Path) -> str:
    """What to add to "cannot read ``path``" when the file is missing from the data folder.

    Parameters
    ----------
    path : Path
        The file that could not be opened.

    Returns
    -------
    str
        ``"; the data folder is <dir> (…): set EAMS_DATA_DIR to the folder that holds the
        shared data"`` when ``path`` lies in the data folder and does not exist, else ``""``
        (a file given elsewhere, or one that exists but cannot be read).
    """
    folder = data_dir()
    if path.exists() or not path.is_relative_to(folder):
        return ""
    origin = f"${DATA_DIR_ENV}" if os.environ.get(DATA_DIR_ENV) else "the default, ../shared/data"
    return (
        f"; the data folder is {folder} ({origin}): set {DATA_DIR_ENV} to the folder that "
        "holds the shared data"
    )
