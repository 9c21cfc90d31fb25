"""One client configuration: explicit kubeconfig, then $KUBECONFIG / ~/.kube/config, then the
in-cluster account; TLS verified unless the kubeconfig says otherwise, said once."""

import logging
import warnings
from pathlib import Path

import pytest

from eams.kube import client
from eams.kube.client import load_configuration
from eams.kube.errors import KubeConfigError


def kubeconfig(path: Path, server: str, insecure: bool = False) -> Path:
    skip = "    insecure-skip-tls-verify: true\n" if insecure else ""
    cluster = f"    server: {server}\n{skip}"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters:\n- name: k\n  cluster:\n{cluster}"
        "users:\n- name: u\n  user:\n    token: t\n"
        "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
    )
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setattr(client, "DEFAULT_KUBECONFIG", tmp_path / "home" / ".kube" / "config")
    for name in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_an_explicit_kubeconfig_wins_over_kubeconfig_env(home: Path, monkeypatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(home / "env", "https://env:6443")))
    explicit = kubeconfig(home / "explicit", "https://explicit:6443")
    assert load_configuration(explicit).host == "https://explicit:6443"
    assert load_configuration().host == "https://env:6443"


def test_kubeconfig_env_then_the_default_file_then_in_cluster(home: Path) -> None:
    with pytest.raises(KubeConfigError, match="in-cluster service account; no \\$KUBECONFIG"):
        load_configuration()
    client.DEFAULT_KUBECONFIG.parent.mkdir(parents=True)
    kubeconfig(client.DEFAULT_KUBECONFIG, "https://home:6443")
    assert load_configuration().host == "https://home:6443"


def test_a_broken_explicit_kubeconfig_is_one_line_naming_it(home: Path) -> None:
    bad = home / "bad"
    bad.write_text("clusters: [\n  nope")
    with pytest.raises(KubeConfigError, match=f"^no Kubernetes API configured \\({bad}\\): ") as e:
        load_configuration(bad)
    assert "\n" not in str(e.value)


def test_tls_is_verified_unless_the_kubeconfig_skips_it_and_that_is_said_once(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert load_configuration(kubeconfig(home / "safe", "https://safe:6443")).verify_ssl
    insecure = kubeconfig(home / "insecure", "https://127.0.0.9:6443", insecure=True)
    with caplog.at_level(logging.WARNING, "eams.kube"), warnings.catch_warnings():
        warnings.simplefilter("error")  # urllib3's own warning would fail the test
        for _ in range(3):
            assert not load_configuration(insecure).verify_ssl
        from urllib3.exceptions import InsecureRequestWarning

        warnings.warn(
            "Unverified HTTPS request is being made to host '127.0.0.9'. Adding certificate "
            "verification is strongly advised.",
            InsecureRequestWarning,
            stacklevel=1,
        )
    said = [r.getMessage() for r in caplog.records if "TLS certificate not verified" in r.message]
    assert said == [f"Kubernetes API at https://127.0.0.9:6443: TLS certificate not verified "
                    f"(insecure-skip-tls-verify in {insecure})"]  # fmt: skip
