"""Kubernetes resource quantities, parsed exactly with :class:`decimal.Decimal`.

Grammar and rounding follow kubernetes/apimachinery ``pkg/api/resource/quantity.go``
(``parseQuantityString``, ``MilliValue``, ``Value``) and ``suffix.go`` (``interpret``), as
summarised in ``../shared/reference/extender-protocol.md`` §4::

    quantity := sign? number suffix
    number   := digits | digits "." digits | digits "." | "." digits
    suffix   := "" | n u m k M G T P E | Ki Mi Gi Ti Pi Ei | (e|E) sign? digits

``E`` alone is exa (10**18); ``e``/``E`` followed by digits is an exponent; ``K``, ``mi``,
``i``, ``B`` and whitespace inside the string are invalid. Values finer than 10**-9 are rounded
up to 1n. A JSON number is accepted as well as a string (``Quantity.UnmarshalJSON``).
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation, localcontext
from functools import lru_cache

from eams.kube.errors import BadQuantity

_DECIMAL_SI = {
    "n": Decimal(10) ** -9,
    "u": Decimal(10) ** -6,
    "m": Decimal(10) ** -3,
    "": Decimal(1),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
}
_BINARY_SI = {f"{p}i": Decimal(2) ** (10 * k) for k, p in enumerate("KMGTPE", start=1)}
_NANO = Decimal(10) ** -9

# number part first (greedy digits, optional dot), then everything left is the suffix.
_QUANTITY_RE = re.compile(r"^([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(.*)$")
_EXPONENT_RE = re.compile(r"^[eE][+-]?[0-9]+$")


def parse_quantity(value: object, field: str) -> Decimal:
    """Parse one quantity exactly.

    Parameters
    ----------
    value : str or int or float
        The quantity as it came over the wire (``"100m"``, ``"1.5Gi"``, ``"1e3"``, ``2``).
    field : str
        Where it came from (``Pod.spec.containers[0].resources.requests.cpu``), for the error.

    Returns
    -------
    Decimal
        The exact value in base units (cores, bytes, count), rounded up to 10**-9.

    Raises
    ------
    BadQuantity
        Naming ``field`` and the offending text when the string breaks the grammar.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise BadQuantity(field, f"quantity must be a string or number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise BadQuantity(field, f"invalid quantity {value!r}")
    text = value.strip() if isinstance(value, str) else repr(value)
    try:
        return _exact(text)
    except ValueError as exc:
        what, note = exc.args
        raise BadQuantity(field, f"{what} {value!r}{note}") from None


@lru_cache(maxsize=4096)
def _exact(text: str) -> Decimal:
    """The exact value of a quantity's text (:func:`parse_quantity`); kept for the few
    distinct texts a cluster uses ("100m", "128Mi"), so a pod event parses none of them again.

    Raises
    ------
    ValueError
        ``(what, note)``: "invalid quantity" or "quantity exponent out of range in", and what
        follows the text ("" or " (bad suffix 'x')").
    """
    match = _QUANTITY_RE.match(text)
    if match is None:
        raise ValueError("invalid quantity", "")
    sign, number, suffix = match.groups()
    if suffix in _DECIMAL_SI:
        multiplier = _DECIMAL_SI[suffix]
    elif suffix in _BINARY_SI:
        multiplier = _BINARY_SI[suffix]
    elif _EXPONENT_RE.match(suffix):
        exponent = int(suffix[1:])
        if abs(exponent) > 1000:
            raise ValueError("quantity exponent out of range in", "")
        multiplier = Decimal(10) ** exponent
    else:
        raise ValueError("invalid quantity", f" (bad suffix {suffix!r})")
    try:
        with localcontext() as ctx:
            ctx.prec = 60
            magnitude = (Decimal(number) * multiplier).quantize(_NANO, rounding=ROUND_CEILING)
    except InvalidOperation:
        raise ValueError("invalid quantity", "") from None
    return -magnitude if sign == "-" else magnitude


def resource_amount(value: object, field: str) -> Decimal:
    """A resource request, limit, overhead or allocatable amount: a quantity that is not negative.

    The grammar allows a sign, but API validation refuses negative requests and limits
    (reference §4.3 ``"-1"``); one reaching the extender would fit every node.

    Raises
    ------
    BadQuantity
        Naming ``field``: the text breaks the grammar or is negative.
    """
    amount = parse_quantity(value, field)
    if amount < 0:
        raise BadQuantity(field, f"a resource amount must not be negative, got {value!r}")
    return amount


def _ceil_away_from_zero(value: Decimal) -> int:
    rounding = ROUND_CEILING if value >= 0 else ROUND_FLOOR
    return int(value.to_integral_value(rounding=rounding))


def milli_value(quantity: Decimal) -> int:
    """``ceil(q × 1000)`` away from zero — CPU millicores (apimachinery ``MilliValue``)."""
    return _ceil_away_from_zero(quantity * 1000)


def integer_value(quantity: Decimal) -> int:
    """``ceil(q)`` away from zero — bytes, pods, extended resources (apimachinery ``Value``)."""
    return _ceil_away_from_zero(quantity)
