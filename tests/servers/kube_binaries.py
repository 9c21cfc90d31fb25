"""The real Kubernetes control plane's binaries, unpacked once per machine and reused.

``../shared/k8s/control-plane-v1.36.2-linux-amd64.tar.xz`` (``$EAMS_K8S_DIR`` overrides the
folder, as ``$EAMS_DATA_DIR`` does the data's) holds kube-apiserver, kube-scheduler,
kube-controller-manager and etcd-embedded (``../shared/k8s/README.md``): ~60 MB packed, ~320 MB
and ~5 s of a busy core to unpack. :func:`unpacked` unpacks it into the system temp dir, into a
folder named after the tarball's size and mtime (a changed tarball gets a new folder), under an
``fcntl.flock`` so that pytest-xdist's workers, and other checkouts on the same machine,
unpack it once and then share it. The ``kube_binaries`` fixture gives that folder to a test
session; without the tarball it fails under ``CI=true`` (``.ci/run`` refuses to start without
it anyway) and skips, loudly, elsewhere (a user's fresh clone).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

K8S_DIR_ENV = "EAMS_K8S_DIR"
TARBALL = "control-plane-v1.36.2-linux-amd64.tar.xz"
BINARIES = ("etcd-embedded", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
_REPO_ROOT = Path(__file__).resolve().parents[2]


def k8s_dir() -> Path:
    """The folder that holds the tarball: ``$EAMS_K8S_DIR``, else ``<repo>/../shared/k8s``
    (it may not exist)."""
    configured = os.environ.get(K8S_DIR_ENV)
    return Path(configured) if configured else _REPO_ROOT.parent / "shared" / "k8s"


def unpacked(tarball: Path, cache_root: Path | None = None) -> Path:
    """The folder holding the tarball's binaries, unpacked by the first caller only.

    Parameters
    ----------
    tarball : Path
        ``control-plane-*.tar.xz``.
    cache_root : Path, optional
        Where the cache folder goes; the system temp dir by default.

    Returns
    -------
    Path
        ``CACHE_ROOT/eams-k8s-<tarball stem>-<size>-<mtime ns>``, holding :data:`BINARIES`.
        Callers that find it complete return at once; the others wait on the lock while one
        unpacks into a side folder and renames it into place (never a half-unpacked folder).

    Raises
    ------
    RuntimeError
        ``tar`` failed or the tarball lacks one of :data:`BINARIES`.
    """
    stat = tarball.stat()
    stem = tarball.name.removesuffix(".tar.xz")
    root = Path(cache_root or tempfile.gettempdir())
    target = root / f"eams-k8s-{stem}-{stat.st_size}-{stat.st_mtime_ns}"
    if _complete(target):
        return target
    with (root / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _complete(target):  # another worker unpacked it while this one waited
            return target
        side = root / f"{target.name}.partial-{os.getpid()}"
        shutil.rmtree(side, ignore_errors=True)
        side.mkdir()
        done = subprocess.run(
            ["tar", "-xJf", str(tarball), "-C", str(side)], capture_output=True, text=True
        )
        if done.returncode != 0 or not _complete(side):
            shutil.rmtree(side, ignore_errors=True)
            raise RuntimeError(f"cannot unpack {tarball} ({BINARIES} expected): {done.stderr}")
        shutil.rmtree(target, ignore_errors=True)  # a leftover without every binary
        side.rename(target)
    return target


def _complete(folder: Path) -> bool:
    return all(os.access(folder / name, os.X_OK) for name in BINARIES)


@pytest.fixture(scope="session")
def kube_binaries() -> Path:
    """The folder holding kube-apiserver, kube-scheduler, kube-controller-manager and
    etcd-embedded, unpacked from ``$EAMS_K8S_DIR/control-plane-v1.36.2-linux-amd64.tar.xz``.

    Fails when the tarball is absent and ``CI=true``; skips, loudly, otherwise.
    """
    tarball = k8s_dir() / TARBALL
    if not tarball.is_file():
        message = f"the Kubernetes control plane {tarball} is absent (set {K8S_DIR_ENV})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return unpacked(tarball)
