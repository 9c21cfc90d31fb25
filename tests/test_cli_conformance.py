"""Every ``eams`` command behaves the same at its edge (``eams/cli.py``, the README's rule).

The walk starts at ``eams`` and follows whatever groups and commands exist, so a command added
later is checked without being named here:

- its help (``-h``) exits 0, has no docstring markup (double backticks, Sphinx roles, numpy
  section headers), no internal references or Python reprs, a help line for every option, and
  no token broken across two lines (every word of the 80-column help is a whole word of the
  same help laid out without a width limit);
- bad invocations made from its own parameters (an unknown option, a value its type refuses,
  required parameters left out) exit 2 with exactly one ``eams: error:`` line naming the
  parameter, and nothing on stdout; a group called bare prints its help and exits 0.

Then a table of the mistakes users made (and a few failures of the world, exit 1), and the
console script itself in a subprocess. Everything else runs :func:`eams.cli.run_cli`
in-process, as the console script does, with the streams captured.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from eams.cli import EXIT_FAILURE, EXIT_USAGE, Context, ValueType, cli, run_cli
from tests.conftest import free_port

EAMS = str(Path(sys.executable).with_name("eams"))
NARROW, WIDE = 80, 100_000
BAD_PATH = "/nonexistent/eams-conformance/x"
JARGON = {
    "double backticks": re.compile(r"``"),
    "a Sphinx role": re.compile(r":(mod|func|class|meth|attr|data|py):`"),
    "an issue number": re.compile(r"\bissue[- ]?#?\d", re.IGNORECASE),
    "a numpy docstring section": re.compile(
        r"^\s*(Parameters|Returns|Raises)\s*$|^\s*-{4,}\s*$", re.M
    ),
    "a Python repr": re.compile(r"\bNone\b|\{\d+: \(|<[a-z_.]+ object at"),
}


def _walk(command: click.Command, ctx: click.Context, path: tuple[str, ...]) -> Iterator[tuple]:
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path)} lists {name} but cannot load it"
            yield from _walk(sub, Context(sub, info_name=name, parent=ctx), (*path, name))


def _commands(width: int) -> dict[tuple[str, ...], tuple[click.Command, click.Context]]:
    root = Context(cli, info_name="eams", terminal_width=width, max_content_width=width)
    return {path: (command, ctx) for path, command, ctx in _walk(cli, root, ())}


COMMANDS = _commands(NARROW)
PATHS = sorted(COMMANDS)
LEAVES = [p for p in PATHS if not isinstance(COMMANDS[p][0], click.Group)]
GROUPS = [p for p in PATHS if isinstance(COMMANDS[p][0], click.Group)]
_ids = " ".join


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``eams ARGS`` in-process: (exit status, stdout, stderr)."""
    with pytest.raises(SystemExit) as exit_info:
        run_cli(cli, "eams", args)
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return code if isinstance(code, int) else (0 if code is None else 1), out, err


def assert_one_error_line(status: int, out: str, err: str, expected: int) -> str:
    """Exit ``expected``, nothing on stdout, exactly one ``eams: error:`` line on stderr."""
    assert status == expected, (status, out, err)
    assert out == "", out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("eams: error: "), err
    return lines[0]


def _words(text: str) -> set[str]:
    return set(text.split())


def test_the_walk_finds_every_component() -> None:
    assert {p[0] for p in PATHS if p} >= {"meter", "calibrate", "agent", "extender", "bench"}
    assert ("meter", "read") in LEAVES and ("wallpower", "check") in LEAVES


@pytest.mark.parametrize("path", PATHS, ids=_ids)
def test_help_is_for_users(path: tuple[str, ...], capsys) -> None:
    status, out, err = run([*path, "-h"], capsys)
    assert status == 0 and err == "", err
    assert out.startswith(f"Usage: {' '.join(('eams', *path))} ")
    for what, pattern in JARGON.items():
        assert not pattern.search(out), f"{what} in the help of eams {' '.join(path)}:\n{out}"
    command, ctx = COMMANDS[path]
    for param in command.get_params(ctx):
        if isinstance(param, click.Option) and not param.hidden:
            assert (param.help or "").strip(), f"eams {' '.join(path)} {param.opts[0]}: no help"


@pytest.mark.parametrize("path", PATHS, ids=_ids)
def test_help_never_breaks_a_token(path: tuple[str, ...]) -> None:
    command, ctx = COMMANDS[path]
    narrow = command.get_help(ctx)
    wide_command, wide_ctx = _commands(WIDE)[path]
    whole = _words(wide_command.get_help(wide_ctx))
    broken = list(_words(narrow) - whole)  # a command list's summary is never cut either
    assert not broken, f"eams {' '.join(path)}: split across lines: {broken}\n{narrow}"


@pytest.mark.parametrize("path", GROUPS, ids=_ids)
def test_a_bare_group_prints_its_help_and_exits_0(path: tuple[str, ...], capsys) -> None:
    status, out, err = run(list(path), capsys)
    assert status == 0 and err == "", err
    assert out.startswith("Usage: ") and "Commands:" in out


@pytest.mark.parametrize("path", LEAVES, ids=_ids)
def test_an_unknown_option_is_one_line_exit_2(path: tuple[str, ...], capsys) -> None:
    line = assert_one_error_line(*run([*path, "--no-such-option"], capsys), EXIT_USAGE)
    assert "'--no-such-option'" in line and f"'eams {' '.join(path)} -h'" in line


def _bad_value(param: click.Parameter, ctx: click.Context) -> str | None:
    """A value the parameter's own type refuses, or None when there is no such value to try."""
    kind = param.type
    if isinstance(param, click.Option) and (param.is_flag or param.count):
        return None
    arguments = [p for p in ctx.command.get_params(ctx) if isinstance(p, click.Argument)]
    if isinstance(param, click.Argument) and param is not arguments[0]:
        return None  # a later argument cannot be given alone
    if isinstance(kind, click.types.Choice):
        candidate = "no-such-choice"
    elif isinstance(kind, click.types.IntParamType | click.types.FloatParamType):
        candidate = "not-a-number"
    elif isinstance(kind, ValueType) or (isinstance(kind, click.Path) and kind.exists):
        candidate = BAD_PATH
    else:
        return None
    try:
        kind.convert(candidate, param, ctx)
    except click.BadParameter:
        return candidate
    return None


BAD_VALUES = [
    (path, param.name, value, param)
    for path in LEAVES
    for param in COMMANDS[path][0].get_params(COMMANDS[path][1])
    if (value := _bad_value(param, COMMANDS[path][1])) is not None
]


@pytest.mark.parametrize(
    ("path", "name", "value", "param"),
    BAD_VALUES,
    ids=[f"{_ids(p)} {n}" for p, n, _, _ in BAD_VALUES],
)
def test_a_value_its_type_refuses_is_one_line_exit_2(path, name, value, param, capsys) -> None:
    args = [value] if isinstance(param, click.Argument) else [param.opts[0], value]
    line = assert_one_error_line(*run([*path, *args], capsys), EXIT_USAGE)
    named = param.opts[0] if isinstance(param, click.Option) else param.human_readable_name
    assert f"'{named}" in line, line  # an argument's metavar may go on ("FILES...")


REQUIRED = [p for p in LEAVES if any(q.required for q in COMMANDS[p][0].get_params(COMMANDS[p][1]))]


@pytest.mark.parametrize("path", REQUIRED, ids=_ids)
def test_required_parameters_left_out_are_one_line_exit_2(path, capsys) -> None:
    line = assert_one_error_line(*run(list(path), capsys), EXIT_USAGE)
    assert "missing" in line


def test_bench_auction_budget_is_the_studys(capsys) -> None:
    _, out, _ = run(["bench", "auction", "-h"], capsys)
    assert "≤ 30 ms" in out  # study §6.1; the README says the same


def _sweep(*extra: str, out: str = "/tmp/eams-conformance.json") -> list[str]:
    return ["calibrate", "sweep", "--node", "n", "--outlet", "1", "--out", out, *extra]


# (arguments, exit status, what the one error line must say): mistakes users made
MISTAKES = [
    (["meter", "read"], EXIT_USAGE, ["missing argument 'URL'"]),
    (["nosuch"], EXIT_USAGE, ["no such command 'nosuch'"]),
    (["calibrate", "fit", "missing.csv"], EXIT_USAGE, ["'FILE'", "missing.csv", "does not exist"]),
    (["agent", "check-config", "nosuch.yaml"], EXIT_USAGE, ["'CONFIG_FILE'", "nosuch.yaml"]),
    (_sweep("--meter", "snmp://h", "--levels", "0,abc,100"), EXIT_USAGE, ["'--levels'", "abc"]),
    (_sweep("--meter", "snmp://h", "--levels", "0,150"), EXIT_USAGE, ["'--levels'", "150"]),
    (_sweep("--meter", "snmp://h", "--settle-s", "-1"), EXIT_USAGE, ["'--settle-s'", "-1"]),
    (_sweep("--meter", "snmp://h", "--measure-s", "nan"), EXIT_USAGE, ["'--measure-s'", "nan"]),
    (_sweep("--meter", "bogus://x"), EXIT_USAGE, ["'--meter'", "unknown scheme 'bogus'"]),
    (["meter", "read", "snmp://h", "--driver", "nosuch"], EXIT_USAGE, ["'--driver'", "nosuch"]),
    (["meter", "read", "snmp://127.0.0.1:99999"], EXIT_USAGE, ["'URL'", "port 99999"]),
    (["extender", "serve", "--port", "99999"], EXIT_USAGE, ["'--port'", "99999"]),
    (["extender", "serve", "--workers", "2"], EXIT_USAGE, ["'--workers'", "one process"]),
    (["extender", "serve", "--log-level", "loud"], EXIT_USAGE, ["'--log-level'", "loud"]),
    (["meter", "simulate", "--port", "99999"], EXIT_USAGE, ["'--port'", "99999"]),
    (["bench", "auction", "--pods", "0"], EXIT_USAGE, ["'--pods'", "0 is not"]),
    (["bench", "auction", "--repeats", "0"], EXIT_USAGE, ["'--repeats'"]),
    (["bench", "auction", "--budgets", "0.05,-1"], EXIT_USAGE, ["'--budgets'", "-1 s"]),
    (["calibrate", "show", "--plot", "/tmp/no/such/folder/p.png", "x"], EXIT_USAGE, ["'--plot'"]),
    (["calibrat"], EXIT_USAGE, ["no such command 'calibrat'", "did you mean 'calibrate'"]),
    (["extender", "serve", "--calibrations", "/nonexistent"], EXIT_USAGE, ["'--calibrations'"]),
    (["extender", "serve", "--window-ms", "-5"], EXIT_USAGE, ["'--window-ms'", "-5"]),
    (["demo", "--out", "/nonexistent/dir/x"], EXIT_USAGE, ["'--out'", "/nonexistent/dir does"]),
    (["demo", "--repeats", "0"], EXIT_USAGE, ["'--repeats'", "0 is not in the range 1<=x<=10"]),
    (
        ["calibrate", "power-states", "mini-1", "--calibration", "missing.json"],
        EXIT_USAGE,
        ["'--calibration'", "missing.json", "does not exist"],  # before the inventory
    ),
]


@pytest.mark.parametrize(("args", "status", "says"), MISTAKES, ids=[_ids(m[0]) for m in MISTAKES])
def test_mistakes_users_made(args: list[str], status: int, says: list[str], capsys) -> None:
    line = assert_one_error_line(*run(args, capsys), status)
    for text in says:
        assert text in line, line


def test_the_world_failing_is_one_line_exit_1(tmp_path: Path, capsys, monkeypatch) -> None:
    header_only = tmp_path / "points.csv"
    header_only.write_text("utilisation,power_w\n")
    line = assert_one_error_line(*run(["calibrate", "fit", str(header_only)], capsys), 1)
    assert "no data rows" in line
    broken = tmp_path / "node.json"
    broken.write_text("{")
    assert_one_error_line(*run(["calibrate", "show", str(broken)], capsys), EXIT_FAILURE)
    silent = f"snmp://public@127.0.0.1:{free_port()}"  # nothing answers there
    args = ["meter", "read", silent, "--timeout-s", "0.2", "--retries", "0"]
    assert_one_error_line(*run(args, capsys), EXIT_FAILURE)
    monkeypatch.setenv("EAMS_POWER_INVENTORY", str(tmp_path / "power.yaml"))  # not there
    line = assert_one_error_line(*run(["power", "wake", "mini-9"], capsys), EXIT_FAILURE)
    assert "power.yaml: cannot read" in line and "--inventory" in line  # where to give it
    with socket.socket() as taken:  # a port in use: this command's line, not uvicorn's log
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        line = assert_one_error_line(*run(["extender", "serve", "--port", port], capsys), 1)
    assert f"cannot listen on 127.0.0.1:{port}" in line and "in use" in line
    args = ["extender", "fallback", "--kubeconfig", str(tmp_path / "kubeconfig")]  # not there
    line = assert_one_error_line(*run(args, capsys), EXIT_FAILURE)
    assert "no Kubernetes API configured" in line and "kubeconfig" in line
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    line = assert_one_error_line(*run(["extender", "serve"], capsys), EXIT_FAILURE)
    assert "WEB_CONCURRENCY='2'" in line


def test_the_command_list_shows_each_summary_whole(capsys) -> None:
    _, out, _ = run(["-h"], capsys)
    commands = " ".join(out.split("Commands:", 1)[1].split())
    assert "..." not in commands and "…" not in commands
    assert "(and, on the PDU owner, every node)." in commands  # agent's, cut at 45 on main


def test_the_console_script(tmp_path: Path) -> None:
    """The installed ``eams`` itself: bare and ``-h`` are help (exit 0); a usage error is one
    line, exit 2, with nothing printed before it (no progress bar's blank line)."""
    for args in ([], ["-h"]):
        done = subprocess.run([EAMS, *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert done.stdout.startswith("Usage: eams ")
    done = subprocess.run(
        [EAMS, *_sweep("--meter", "bogus://x")], capture_output=True, text=True, check=False
    )
    assert done.returncode == EXIT_USAGE and done.stdout == ""
    assert done.stderr.startswith("eams: error: ") and done.stderr.count("\n") == 1
    # a meter that does not answer: the world failed, and still one line, nothing before it
    silent = f"snmp://public@127.0.0.1:{free_port()}"
    fast = ["--settle-s", "1", "--measure-s", "1", "--sample-s", "0.5"]
    out = tmp_path / "n.json"
    argv = [EAMS, *_sweep("--meter", silent, *fast, out=str(out))]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == EXIT_FAILURE and done.stdout == "", done.stdout
    assert done.stderr.startswith("eams: error: node n: ") and done.stderr.count("\n") == 1
