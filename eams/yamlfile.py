"""Reading a YAML file a user wrote (inventories, the power manager's config, bench manifests):
one place that turns the file system's and the parser's failures into one line naming the file.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from eams.errors import EamsError


def read_yaml(path: str | Path, error: type[EamsError]) -> object:
    """The parsed document at ``path`` (``safe_load``: plain data, no tags), not yet validated.

    Parameters
    ----------
    path : str or Path
    error : EamsError subclass
        What to raise, so each caller keeps its own error family.

    Returns
    -------
    object
        Whatever the document holds (``None`` for an empty file); callers validate it.

    Raises
    ------
    error
        ``PATH: cannot read: REASON`` (missing, a folder, no permission) or ``PATH: not YAML:
        WHAT AND WHERE`` (the parser's message on one line, with its line and column).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{path}: not YAML: {' '.join(str(exc).split())}") from exc
