"""Quantities parse exactly as apimachinery does (reference §4.3 table, quantity_test.go)."""

from decimal import ROUND_CEILING, Decimal, localcontext

import pytest

from eams.kube.errors import BadQuantity
from eams.kube.quantity import integer_value, milli_value, parse_quantity

CASES = [
    ("1", Decimal(1), 1000, 1),
    ("500m", Decimal("0.5"), 500, 1),
    ("100m", Decimal("0.1"), 100, 1),
    ("0.5", Decimal("0.5"), 500, 1),
    ("1.5", Decimal("1.5"), 1500, 2),
    (".5", Decimal("0.5"), 500, 1),
    ("1.", Decimal(1), 1000, 1),
    ("1.G", Decimal(10) ** 9, None, 10**9),
    ("0.1m", Decimal("0.0001"), 1, 1),
    ("100u", Decimal("0.0001"), 1, 1),
    ("5n", Decimal("0.000000005"), 1, 1),
    ("1e3", Decimal(1000), 1_000_000, 1000),
    ("1E3", Decimal(1000), 1_000_000, 1000),
    ("1e-3", Decimal("0.001"), 1, 1),
    ("1.3E+6", Decimal(1_300_000), None, 1_300_000),
    ("1E", Decimal(10) ** 18, None, 10**18),
    ("12E", 12 * Decimal(10) ** 18, None, 12 * 10**18),
    ("1k", Decimal(1000), None, 1000),
    ("1Ki", Decimal(1024), None, 1024),
    ("1M", Decimal(10) ** 6, None, 10**6),
    ("1Mi", Decimal(2) ** 20, None, 2**20),
    ("123Mi", Decimal(128974848), None, 128974848),
    ("129e6", Decimal(129_000_000), None, 129_000_000),
    ("1.5Gi", Decimal(1610612736), None, 1610612736),
    ("0.5Gi", Decimal(536870912), None, 536870912),
    ("0.1Gi", Decimal("107374182.4"), None, 107374183),
    ("107374182400m", Decimal("107374182.4"), None, 107374183),  # canonical 0.1Gi: memory in m
    ("100.035Ki", Decimal("102435.84"), None, 102436),
    ("1m", Decimal("0.001"), 1, 1),
    ("0.0000000001", Decimal("0.000000001"), 1, 1),  # rounded up to 1n
    ("3900m", Decimal("3.9"), 3900, 4),
    ("16318064Ki", Decimal(16709697536), None, 16709697536),
    ("+1", Decimal(1), 1000, 1),
    ("-1", Decimal(-1), -1000, -1),
    (" 2 ", Decimal(2), 2000, 2),  # JSON unmarshalling trims surrounding space
    (2, Decimal(2), 2000, 2),  # a bare JSON number
    (0.25, Decimal("0.25"), 250, 1),
]


@pytest.mark.parametrize(("text", "value", "milli", "integer"), CASES)
def test_parses_exactly(text, value, milli, integer) -> None:
    parsed = parse_quantity(text, "f")
    assert parsed == value
    if milli is not None:
        assert milli_value(parsed) == milli
    assert integer_value(parsed) == integer


@pytest.mark.parametrize(
    "text",
    [
        "1K",
        "1e",
        "0.1mi",
        "1i",
        ".5i",
        "1.1.M",
        "1+1.0M",
        "aoeu",
        "-3.01e-",
        "",
        "1 Gi",
        "B",
        "1B",
        "١",
        True,
        None,
        [1],
    ],
)
def test_rejects_bad_quantities_naming_the_field(text) -> None:
    with pytest.raises(
        BadQuantity, match=r"^Pod\.spec\.containers\[0\]\.resources\.requests\.cpu: "
    ):
        parse_quantity(text, "Pod.spec.containers[0].resources.requests.cpu")


MANTISSAS = ["0", "1", "7", "12", "100", "0.5", "1.5", "3.25", ".75", "999", "16318240", "-2"]
SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E"]
SUFFIXES += ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "E-2", "e+6", "e0"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_agrees_with_the_kubernetes_client_on_the_values_both_accept(suffix) -> None:
    """The kubernetes client's ``parse_quantity`` keeps every digit; apimachinery (and this
    parser) round up to 10**-9 — the only difference on well-formed quantities."""
    from kubernetes.utils.quantity import parse_quantity as client_parse

    for mantissa in MANTISSAS:
        text = mantissa + suffix
        with localcontext() as ctx:
            ctx.prec = 60
            theirs = Decimal(client_parse(text)).quantize(Decimal(10) ** -9, ROUND_CEILING)
        assert parse_quantity(text, "f") == theirs, text


def test_is_stricter_than_the_kubernetes_client_as_apimachinery_is() -> None:
    """``K`` is not a suffix in apimachinery (``k`` is); the client takes it as kilo."""
    from kubernetes.utils.quantity import parse_quantity as client_parse

    assert client_parse("1K") == 1000
    with pytest.raises(BadQuantity):
        parse_quantity("1K", "f")
