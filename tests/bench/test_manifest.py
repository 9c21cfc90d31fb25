"""A bench manifest with several bad fields is refused naming every one, with its path."""

import pytest

from eams.scheduler.bench.errors import ManifestError
from eams.scheduler.bench.manifest import parse_manifest


def test_every_bad_field_of_a_manifest_is_named_in_one_message() -> None:
    data = {
        "name": "unit",
        "schedulers": ["default", "kube-magic"],
        "rho": [0.5, -1],
        "seeds": [],
        "cluster": {"node_count": 3, "groups": [{"fraction": 0.5}, {"fraction": 2}]},
    }
    with pytest.raises(ManifestError) as caught:
        parse_manifest(data, source="m.yaml")
    message = str(caught.value)
    assert message.startswith("m.yaml: ") and "\n" not in message
    for expected in (
        "cluster.groups[1].fraction: Input should be less than or equal to 1",
        "cluster.node_count: Extra inputs are not permitted",
        "schedulers: unknown scheduler 'kube-magic'",
        "rho: ρ must be > 0, got -1.0",
        "seeds: List should have at least 1 item",
    ):
        assert expected in message
