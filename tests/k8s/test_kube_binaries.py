"""The control plane's tarball is unpacked once however many processes ask at the same time,
and again only when the tarball changes."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.servers.kube_binaries import BINARIES, unpacked

REPO = Path(__file__).resolve().parents[2]
ASK = "import sys; from pathlib import Path; from tests.servers.kube_binaries import unpacked; "
ASK += "print(unpacked(Path(sys.argv[1]), Path(sys.argv[2])))"


def fake_tarball(folder: Path) -> Path:
    """A ``.tar.xz`` of four small executables named as the real binaries."""
    for name in BINARIES:
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    tarball = folder / "control-plane-test.tar.xz"
    with tarfile.open(tarball, "w:xz") as tar:
        for name in BINARIES:
            tar.add(folder / name, arcname=name)
    return tarball


def counting_tar(folder: Path, count: Path) -> dict[str, str]:
    """An environment whose ``tar`` notes each run in ``count`` and takes its time, so that
    two processes asking at once overlap."""
    folder.mkdir()
    tar = folder / "tar"
    tar.write_text(f'#!/bin/sh\necho run >> "{count}"\nsleep 1\nexec /usr/bin/tar "$@"\n')
    tar.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}", "PYTHONPATH": str(REPO)}


def test_two_processes_asking_at_once_unpack_once(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "cache").mkdir()
    tarball = fake_tarball(tmp_path / "src")
    count = tmp_path / "tar-runs"
    env = counting_tar(tmp_path / "bin", count)
    argv = [sys.executable, "-c", ASK, str(tarball), str(tmp_path / "cache")]
    askers = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
              for _ in range(2)]  # fmt: skip
    answers = [asker.communicate(timeout=60)[0].strip() for asker in askers]
    assert [asker.returncode for asker in askers] == [0, 0]
    assert answers[0] == answers[1]
    assert count.read_text().splitlines() == ["run"]
    assert sorted(p.name for p in Path(answers[0]).iterdir()) == sorted(BINARIES)
    leftovers = [p.name for p in (tmp_path / "cache").iterdir() if ".partial-" in p.name]
    assert leftovers == []


def test_a_changed_tarball_is_unpacked_again(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    tarball = fake_tarball(tmp_path / "src")
    first = unpacked(tarball, tmp_path)
    assert unpacked(tarball, tmp_path) == first
    os.utime(tarball, ns=(0, tarball.stat().st_mtime_ns + 1_000_000_000))
    second = unpacked(tarball, tmp_path)
    assert second != first
    assert all(os.access(second / name, os.X_OK) for name in BINARIES)
