"""The distribution installs every package folder under ``eams.*`` and wires every CLI group."""

import glob
import subprocess
import sys
import tomllib
from pathlib import Path

from click.testing import CliRunner

from eams.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def _declared_packages() -> tuple[set[str], dict[str, str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(config["packages"]), config["package-dir"]


def test_every_package_folder_is_declared() -> None:
    declared, package_dir = _declared_packages()
    found = set()
    for name, folder in package_dir.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *relative)))
    assert found - declared == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_no_bare_top_level_component_modules() -> None:
    _, package_dir = _declared_packages()
    assert all(name == "eams" or name.startswith("eams.") for name in package_dir)


def test_every_component_group_is_on_the_eams_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    groups = ("meter", "calibrate", "agent", "extender", "bench", "wallpower", "explain", "demo")
    for group in groups:
        assert f"  {group} " in result.output


def test_a_command_loads_only_its_own_component() -> None:
    code = (
        "import sys; from eams.cli import cli; cli(['agent', '--help'], standalone_mode=False);"
        "print(sorted(m for m in ('eams.scheduler', 'scipy', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_every_template_is_package_data() -> None:
    """A file a package reads at run time from a sub-folder (the report's Jinja2 templates)
    is installed only when a package-data glob names it: setuptools globs from the package's
    folder, where ``*`` does not cross a ``/``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared, package_dir = set(config["packages"]), config["package-dir"]
    data = config["package-data"]
    templates = [
        path
        for name, folder in package_dir.items()
        for path in (ROOT / folder).rglob("templates/*")
        if path.is_file()
    ]
    assert templates, "the report's templates are under a templates/ folder"
    for path in templates:
        package = _owner(path, declared, package_dir)
        folder = _folder(package, package_dir)
        covered = {
            (folder / match).resolve()
            for pattern in data.get(package, []) + data.get("*", [])
            for match in glob.glob(pattern, root_dir=folder)
        }
        assert path.resolve() in covered, f"add {path.relative_to(folder)} to {package}'s data"


def _folder(package: str, package_dir: dict[str, str]) -> Path:
    """The source folder of a dotted package under pyproject's package-dir mapping."""
    parts = package.split(".")
    for i in range(len(parts), 0, -1):
        root = ".".join(parts[:i])
        if root in package_dir:
            return ROOT / package_dir[root] / Path(*parts[i:])
    raise AssertionError(package)


def _owner(path: Path, declared: set[str], package_dir: dict[str, str]) -> str:
    """The declared package whose folder holds ``path`` most closely."""
    owners = [p for p in declared if _folder(p, package_dir) in path.parents]
    return max(owners, key=lambda p: len(_folder(p, package_dir).parts))
