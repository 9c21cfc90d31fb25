"""The Lease layer's pure parts: names, the MicroTime format, and the observer's judgement
(by when it saw the record change on its own clock, client-go's rule). The Lease written to and
read from a real kube-apiserver: ``tests/k8s/test_gate_fallback.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from eams.kube.lease import LEASE_DURATION_S, LeaseObserver, lease_ref, micro_time


def test_lease_ref_splits_namespace_and_name() -> None:
    assert lease_ref("kube-system/eams-market") == ("kube-system", "eams-market")
    assert lease_ref("ns/a.b-c") == ("ns", "a.b-c")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("eams-market", "is not NAMESPACE/NAME"),
        ("a/b/c", "is not NAMESPACE/NAME"),
        ("/name", "namespace ''"),
        ("Kube/name", "namespace 'Kube'"),
        ("ns/", "name ''"),
        ("ns/Name_1", "name 'Name_1'"),
        ("a" * 64 + "/n", "is not a DNS-1123 label"),
    ],
)
def test_lease_ref_names_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        lease_ref(text)


def test_micro_time_is_rfc3339_utc_with_microseconds() -> None:
    at = datetime(2026, 12, 7, 4, 10, 0, 123456, tzinfo=timezone(timedelta(hours=1)))
    assert micro_time(at) == "2026-12-07T03:10:00.123456Z"
    assert micro_time(datetime(2026, 1, 2, tzinfo=UTC)) == "2026-01-02T00:00:00.000000Z"


def spec(renew: str, duration: int = 3, holder: str = "x") -> dict[str, object]:
    return {"holderIdentity": holder, "renewTime": renew, "leaseDurationSeconds": duration}


def test_a_lease_renewed_in_time_holds_and_one_left_alone_lapses() -> None:
    observer = LeaseObserver(now_s=100.0)
    observer.observe(spec("t1"), 100.0)
    observer.observe(spec("t2"), 102.5)  # renewed: judged from 102.5 on
    assert not observer.expired(105.5)
    observer.observe(spec("t2"), 105.5)  # the same record read again is no renewal
    assert observer.expired(105.6)
    assert observer.silent_s(105.6) == pytest.approx(3.1)
    observer.observe(spec("t3"), 106.0)
    assert not observer.expired(106.0)


def test_the_holders_clock_is_never_compared_with_the_observers() -> None:
    observer = LeaseObserver(now_s=0.0)
    observer.observe(spec("1999-01-01T00:00:00.000000Z"), 0.0)  # a holder whose clock is off
    assert not observer.expired(2.9)


def test_a_missing_lease_lapses_one_default_duration_after_the_start() -> None:
    observer = LeaseObserver(now_s=10.0)
    observer.observe(None, 10.0)
    assert not observer.expired(10.0 + LEASE_DURATION_S)
    assert observer.expired(10.0 + LEASE_DURATION_S + 0.1)


def test_the_leases_own_duration_is_used() -> None:
    observer = LeaseObserver(now_s=0.0)
    observer.observe(spec("t1", duration=10), 0.0)
    assert not observer.expired(9.0)
    assert observer.expired(10.5)
    observer.observe(spec("t2", duration=0), 11.0)  # a nonsense duration keeps the last one
    assert not observer.expired(20.0) and observer.expired(21.5)
