"""The distribution installs every package folder under ``eams.*`` and wires every CLI group."""

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
