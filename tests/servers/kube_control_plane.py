"""A real Kubernetes control plane on loopback: etcd and kube-apiserver 1.36, with the shipped
RBAC applied and one identity (bearer token, kubeconfig) per account a test acts as.

Why real: kube-scheduler's own integration tests run against a real kube-apiserver, never a
hand-written fake (STYLE.md); ``tests/servers/kubeapi.py`` answers only the calls we thought of,
in the format we thought it had, and authorises everything. Here admission, RBAC, strategic
merge patches, optimistic concurrency, watches and the bootstrap roles are the real ones.

What runs (``../shared/k8s/README.md`` lists the flags checked on these machines):

- ``etcd-embedded DIR CLIENT_URL PEER_URL`` (fsync off), ready when ``GET /health`` answers;
- ``kube-apiserver`` on a free loopback port with ``--authorization-mode=Node,RBAC`` and a
  ``--token-auth-file`` holding a line for ``admin`` (group ``system:masters``), one for
  ``system:kube-scheduler`` (the bootstrap roles' scheduler user) and one per service account
  the shipped manifests use (:func:`shipped_service_accounts`); ready when ``/readyz`` answers
  over TLS verified against the self-signed CA it writes to ``--cert-dir`` (``apiserver.crt``:
  the serving certificate, then its CA), and the system namespaces exist.

Then the shipped ServiceAccounts, Roles, ClusterRoles and their bindings (``deploy/k3s/**``)
are created, and :meth:`ControlPlane.start` returns once the RBAC authoriser grants each
binding, so a verb missing from a shipped role fails the test that needs it. Every identity
has a kubeconfig (``certificate-authority`` = that CA, the token), usable by kubectl, the
kubernetes Python client and kube-scheduler; :meth:`ControlPlane.client` is an httpx client.

The ``control_plane`` fixture starts one per test module (~4 s here) in a temp dir that keeps
the logs (``*.log``), and stops it after the module's last test. Tests of one module share it:
they use node and pod names of their own and delete what they create.
"""

from __future__ import annotations

import secrets
import ssl
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import httpx
import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.conftest import free_port
from tests.servers._process import ServerProcess

T = TypeVar("T")

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k3s"
ADMIN = "admin"
SCHEDULER_USER = "system:kube-scheduler"
RBAC_KINDS = ("ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-node-lease")


def eventually(check: Callable[[], T | None], timeout_s: float, what: str) -> T:
    """Call ``check`` every 0.1 s until it returns something truthy, and return that.

    Raises
    ------
    AssertionError
        Not within ``timeout_s`` seconds; says ``what`` was awaited and what ``check`` last
        returned.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s (last: {last!r})")
        time.sleep(0.1)


def shipped_documents(deploy: Path = DEPLOY) -> list[dict[str, Any]]:
    """Every YAML document of ``deploy`` and its sub-folders (sorted paths; kustomizations
    and empty documents left out)."""
    docs = []
    for path in sorted(deploy.rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d and "kind" in d]
    return [d for d in docs if d["kind"] != "Kustomization"]


def shipped_service_accounts(deploy: Path = DEPLOY) -> list[str]:
    """``NAMESPACE/NAME`` of every service account the shipped manifests declare, bind or run
    a pod as (``serviceAccountName`` of a pod template), sorted."""
    found: set[str] = set()
    for doc in shipped_documents(deploy):
        namespace = doc["metadata"].get("namespace", "default")
        if doc["kind"] == "ServiceAccount":
            found.add(f"{namespace}/{doc['metadata']['name']}")
        for subject in doc.get("subjects") or []:
            if subject["kind"] == "ServiceAccount":
                found.add(f"{subject['namespace']}/{subject['name']}")
        pod = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
        if "serviceAccountName" in pod:
            found.add(f"{namespace}/{pod['serviceAccountName']}")
    return sorted(found)


@dataclass(frozen=True)
class Identity:
    """Who a test acts as: the user the apiserver authenticates, its groups, the bearer token
    and a kubeconfig that presents it."""

    user: str
    groups: tuple[str, ...]
    token: str
    kubeconfig: Path


class Etcd(ServerProcess):
    """``etcd-embedded`` with its data in ``root/etcd``, on free loopback ports."""

    def __init__(self, binaries: Path, root: Path):
        super().__init__()
        self.url = f"http://127.0.0.1:{free_port()}"
        peer = f"http://127.0.0.1:{free_port()}"
        self.argv = [str(binaries / "etcd-embedded"), str(root / "etcd"), self.url, peer]
        self.ready_url = f"{self.url}/health"
        self.log_path = root / "etcd.log"


class KubeApiServer(ServerProcess):
    """``kube-apiserver`` on a free loopback port, storing in ``etcd``; files in ``root``.

    Ready when ``/readyz`` answers ``admin_token`` over TLS verified against :attr:`ca`.
    """

    start_timeout_s = 60.0  # ~2 s here, more on a machine whose cores are busy

    def __init__(self, binaries: Path, root: Path, etcd: Etcd, tokens: Path, admin_token: str):
        super().__init__()
        port = free_port()
        self.url = f"https://127.0.0.1:{port}"
        self.ca = root / "certs" / "apiserver.crt"
        self.admin_token = admin_token
        sa_key, sa_pub = _service_account_keys(root)
        self.argv = [
            str(binaries / "kube-apiserver"),
            f"--etcd-servers={etcd.url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={root / 'certs'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={sa_pub}",
            f"--service-account-signing-key-file={sa_key}",
            f"--token-auth-file={tokens}",
            "--authorization-mode=Node,RBAC",
            "--service-cluster-ip-range=10.96.0.0/24",
            # no controller makes the default service accounts unless a controller-manager runs
            "--disable-admission-plugins=ServiceAccount",
        ]
        self.ready_url = f"{self.url}/readyz"
        self.log_path = root / "kube-apiserver.log"

    def answers(self) -> bool:
        """``/readyz`` is 200, asked as admin over TLS checked against the apiserver's CA."""
        if not self.ca.is_file():
            return False  # it writes the certificate before it listens
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        try:
            tls = _tls(self.ca)
        except ssl.SSLError:
            return False  # the file exists but is still being written (no whole PEM yet)
        try:
            with httpx.Client(verify=tls, headers=headers, timeout=2.0) as client:
                return client.get(self.ready_url).is_success
        except httpx.TransportError:
            return False


class ControlPlane:
    """etcd and kube-apiserver in ``root``, with the shipped RBAC applied (see the module).

    Parameters
    ----------
    binaries : Path
        The unpacked folder (``kube_binaries`` fixture).
    root : Path
        An empty directory: data, certificates, tokens, kubeconfigs, logs.
    service_accounts : iterable of str, optional
        ``NAMESPACE/NAME`` of the accounts to give a token; the shipped ones by default.

    Attributes
    ----------
    url : str
        ``https://127.0.0.1:PORT``.
    ca : Path
        The apiserver's certificate and its self-signed CA (PEM): what clients verify against.
    identities : dict of str to Identity
        ``"admin"`` (``system:masters``), ``"system:kube-scheduler"`` and ``"NAMESPACE/NAME"``
        per service account.
    """

    def __init__(self, binaries: Path, root: Path, service_accounts: Iterable[str] | None = None):
        self.binaries = binaries
        self.root = root
        accounts = shipped_service_accounts() if service_accounts is None else service_accounts
        self.identities: dict[str, Identity] = {}
        self._add_identity(ADMIN, ADMIN, ("system:masters",))
        self._add_identity(SCHEDULER_USER, SCHEDULER_USER, ("system:authenticated",))
        for account in accounts:
            namespace, name = account.split("/")
            groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                      "system:authenticated")  # fmt: skip
            self._add_identity(account, f"system:serviceaccount:{namespace}:{name}", groups)
        tokens = root / "tokens.csv"
        tokens.write_text("".join(
            f'{i.token},{i.user},uid-{n},"{",".join(i.groups)}"\n'
            for n, i in enumerate(self.identities.values())
        ))  # fmt: skip
        self.etcd = Etcd(binaries, root)
        self.apiserver = KubeApiServer(binaries, root, self.etcd, tokens, self.identity().token)
        self.url = self.apiserver.url
        self.ca = self.apiserver.ca

    def _add_identity(self, key: str, user: str, groups: tuple[str, ...]) -> None:
        token = secrets.token_hex(16)
        path = self.root / f"kubeconfig-{key.replace('/', '.').replace(':', '-')}"
        self.identities[key] = Identity(user, groups, token, path)

    def start(self) -> None:
        """Start etcd and the apiserver, write the kubeconfigs, apply the shipped RBAC.

        Raises
        ------
        RuntimeError
            A server exited or did not answer; quotes the end of its log.
        """
        self.etcd.start()
        self.apiserver.start()
        for identity in self.identities.values():
            _write_kubeconfig(identity, self.url, self.ca)
        with self.client() as admin:
            for namespace in SYSTEM_NAMESPACES:  # made by a post-start hook, after /readyz
                eventually(lambda n=namespace: admin.get(f"/api/v1/namespaces/{n}").is_success,
                           30, f"namespace {namespace}")  # fmt: skip
        self.apply([d for d in shipped_documents() if d["kind"] in RBAC_KINDS])

    def stop(self) -> None:
        """Stop the apiserver, then etcd (SIGTERM, SIGKILL after 10 s); idempotent."""
        self.apiserver.stop()
        self.etcd.stop()

    def __enter__(self) -> ControlPlane:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def identity(self, who: str = ADMIN) -> Identity:
        """The identity ``who``: ``"admin"``, ``"system:kube-scheduler"`` or
        ``"NAMESPACE/NAME"`` of a service account."""
        return self.identities[who]

    def kubeconfig(self, who: str = ADMIN) -> Path:
        """The kubeconfig file of identity ``who`` (TLS verified against :attr:`ca`)."""
        return self.identity(who).kubeconfig

    def client(self, who: str = ADMIN, timeout_s: float = 10.0) -> httpx.Client:
        """An httpx client of the apiserver (``base_url`` set) acting as identity ``who``;
        the caller closes it."""
        return apiserver_client(self.url, self.identity(who).token, self.ca, timeout_s)

    def apply(self, documents: Iterable[dict[str, Any]]) -> None:
        """Create each object as admin (POST to its collection: ``kind`` lowercased plus "s",
        or "y" made "ies", which holds for every kind the tests create), then wait until the
        RBAC authoriser grants every RoleBinding or ClusterRoleBinding among them.

        Raises
        ------
        httpx.HTTPStatusError
            The apiserver refused an object.
        AssertionError
            A binding was not in force within 30 s.
        """
        documents = list(documents)
        with self.client() as admin:
            for doc in documents:
                admin.post(_collection(doc), json=doc).raise_for_status()
            for doc in documents:
                if doc["kind"] in ("RoleBinding", "ClusterRoleBinding"):
                    _await_binding(admin, doc)


def _collection(doc: dict[str, Any]) -> str:
    api = "/api/v1" if doc["apiVersion"] == "v1" else f"/apis/{doc['apiVersion']}"
    namespace = doc["metadata"].get("namespace")
    scope = f"/namespaces/{namespace}" if namespace else ""
    kind = doc["kind"].lower()
    plural = kind[:-1] + "ies" if kind.endswith("y") else kind + "s"  # MutatingAdmissionPolicy
    return f"{api}{scope}/{plural}"


def _await_binding(admin: httpx.Client, binding: dict[str, Any]) -> None:
    """Poll a SubjectAccessReview of the bound role's first resource rule, for each subject,
    until it is allowed: the authoriser reads roles and bindings from its own watch caches."""
    namespace = binding["metadata"].get("namespace")
    ref = binding["roleRef"]
    where = f"/namespaces/{namespace}" if ref["kind"] == "Role" else ""
    role = admin.get(f"/apis/rbac.authorization.k8s.io/v1{where}/{ref['kind'].lower()}s/"
                     f"{ref['name']}")  # fmt: skip
    role.raise_for_status()
    rules = [r for r in role.json().get("rules") or [] if r.get("resources")]
    if not rules:
        return
    rule = rules[0]
    attributes = {"verb": rule["verbs"][0], "group": rule["apiGroups"][0],
                  "resource": rule["resources"][0], "namespace": namespace or "",
                  "name": (rule.get("resourceNames") or [""])[0]}  # fmt: skip
    for subject in binding["subjects"]:
        if subject["kind"] == "ServiceAccount":
            user = f"system:serviceaccount:{subject['namespace']}:{subject['name']}"
        else:
            user = subject["name"]
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": user, "resourceAttributes": attributes}}  # fmt: skip

        def allowed(review: dict[str, Any] = review) -> bool:
            answer = admin.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
            return bool(answer.json().get("status", {}).get("allowed"))

        eventually(allowed, 30, f"{binding['metadata']['name']} in force for {user}")


def _tls(ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))


def apiserver_client(
    url: str, token: str, ca: Path | str, timeout_s: float = 10.0, connections: int | None = None
) -> httpx.Client:
    """An httpx client of the apiserver at ``url`` (``base_url`` set) with a bearer ``token``,
    verifying against ``ca`` (PEM); ``connections`` caps its pool (httpx's default when
    ``None``). For a process that has the plane's address but not the plane (the benchmarks'
    load generators); the caller closes it."""
    limits = (
        httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        if connections
        else httpx.Limits()
    )
    return httpx.Client(
        base_url=url,
        verify=_tls(Path(ca)),
        headers={"Authorization": f"Bearer {token}"},
        timeout=timeout_s,
        limits=limits,
    )


def _service_account_keys(root: Path) -> tuple[Path, Path]:
    """An RSA key pair for the apiserver's service-account tokens (PEM: private, public)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = root / "sa.key", root / "sa.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption()))  # fmt: skip
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))  # fmt: skip
    return private, public


def _write_kubeconfig(identity: Identity, url: str, ca: Path) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "eams-test",
                      "cluster": {"server": url, "certificate-authority": str(ca)}}],
        "users": [{"name": identity.user, "user": {"token": identity.token}}],
        "contexts": [{"name": "eams-test",
                      "context": {"cluster": "eams-test", "user": identity.user}}],
        "current-context": "eams-test",
    }  # fmt: skip
    identity.kubeconfig.write_text(yaml.safe_dump(config))


@pytest.fixture(scope="module")
def control_plane(
    kube_binaries: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    """A fresh control plane (etcd, kube-apiserver, the shipped RBAC) for one test module;
    stopped after its last test. Its files and logs stay in pytest's temp dir."""
    with ControlPlane(kube_binaries, tmp_path_factory.mktemp("control-plane")) as plane:
        yield plane
