"""One line naming every problem pydantic found, each with its path.

Everything EAMS validates with pydantic (calibration files, the fleet inventory, the agent
config, the extender's requests and watch events, the bench manifest) turns a
:class:`pydantic.ValidationError` into its message here, so the user sees at once all that is
wrong, each problem named by where it is: ``sinks[1].url: expected an http(s):// URL``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

_VALUE_ERROR = "Value error, "
"""What pydantic puts before the message of a ``ValueError`` raised in a validator."""


def describe_validation_error(
    exc: ValidationError,
    *,
    template: str = "{path}: {message}",
    root: str = "",
    top: str = "(top level)",
    dotted_index: bool = False,
    hide: Collection[str] = (),
) -> str:
    """Every error of ``exc``, in pydantic's order, as ``path: message`` joined by ``"; "``.

    Parameters
    ----------
    exc : pydantic.ValidationError
    template : str
        How one error is written, with ``{path}`` and ``{message}`` (e.g.
        ``"field '{path}': {message}"``).
    root : str
        Path of the validated value itself, put in front of every path (``items[3]``).
    top : str
        The name of an empty path (an error of the whole value).
    dotted_index : bool
        Write list indexes as ``levels.1`` instead of ``levels[1]``.
    hide : collection of str
        Location parts to leave out: the tags pydantic inserts for a discriminated union
        (``sinks[1].influx_v2.url`` is written ``sinks[1].url``).

    Returns
    -------
    str
        One line (``"power_cap_w: Input should be greater than 0; spool.policy: Field
        required"``). A validator's ``ValueError`` text is shown without pydantic's
        ``"Value error, "`` prefix.
    """

    def path(loc: Sequence[int | str]) -> str:
        text = root
        for part in loc:
            if isinstance(part, int) and not dotted_index:
                text += f"[{part}]"
            elif part not in hide:
                text += f".{part}" if text else str(part)
        return text or top

    return "; ".join(
        template.format(path=path(error["loc"]), message=error["msg"].removeprefix(_VALUE_ERROR))
        for error in exc.errors()
    )
