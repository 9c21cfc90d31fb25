"""The ``eams`` command: one click group per component; this module wires them and is the one
home of how every command behaves at its edge.

Groups are imported when they are called, not when ``eams`` starts, so ``eams agent run`` loads
the agent and not the scheduler, scipy or matplotlib.

Exit statuses (the README's rule), for every command:

- 0: done (also ``-h``/``--help`` and a group called without a sub-command, which prints its
  help);
- 1 (:data:`EXIT_FAILURE`): the command was well formed but the world failed: a device that
  does not answer, a file whose content is refused, a fit that cannot be made, a port in use
  (an :class:`~eams.errors.EamsError`);
- 2 (:data:`EXIT_USAGE`): bad invocation or value: an unknown command or option, a missing
  argument, a value that does not parse or is out of range, an input file that does not
  exist;
- 130: interrupted (Ctrl-C). A command may document one more of its own (``wallpower check``:
  3 on FAIL).

Every error, usage errors included, is exactly one ``eams: error: …`` line on stderr
(:func:`run_cli`). A command conforms by being run through :func:`run_cli` (``eams`` and the
``python -m`` entry points are): it then gets ``-h``, the help formatter (no token broken
across lines, reStructuredText literals shown as `x`) and the one-line errors. A value error
is a usage error when the option's type finds it: use :class:`ValueType` around a parser that
raises :class:`~eams.errors.EamsError` or :class:`ValueError`, :class:`FiniteFloatRange` for
numbers, ``click.Path(exists=True)`` for input files, :data:`OUTPUT_FILE` for a file to write,
and :func:`log_level_option`.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import math
import re
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
from click.formatting import iter_rows, measure_table, term_len

from eams import __version__
from eams.errors import EamsError

COMMANDS = {
    "meter": "eams.meter.cli:meter",
    "calibrate": "eams.calibrate.cli:calibrate",
    "agent": "eams.agent.cli:agent",
    "extender": "eams.scheduler.cli:extender",
    "bench": "eams.scheduler.cli:bench",
    "power": "eams.scheduler.power.cli:power",
    "wallpower": "eams.calibrate.wallpower.cli:wallpower",
    "explain": "eams.scheduler.record.cli:explain",
    "demo": "eams.demo.cli:demo",
}
"""Command name → ``module:attribute`` of its click command or group."""

HELP_OPTIONS = ["-h", "--help"]
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
"""The ``--log-level`` choices of every command that has one (Python's logging level names)."""

_LITERAL = re.compile(r"``(.+?)``")


def _plain(text: str) -> str:
    """Help text for a terminal: a docstring's ``literal`` shown as `literal`."""
    return _LITERAL.sub(r"`\1`", text)


def wrap_help(text: str, width: int, indent: str = "") -> str:
    """Wrap help text the way click does, but never inside a token.

    Paragraphs are separated by blank lines and keep their first line's indentation; a
    paragraph whose first line is ``\\b`` is kept line by line (click's convention). A word
    longer than the width, or one with hyphens (``Wake-on-LAN``, ``--run-a``), stays whole on
    its line: a user copies options, URLs and specs from the help.

    Parameters
    ----------
    text : str
    width : int
        Columns, indentation included.
    indent : str
        Prefix of every line.

    Returns
    -------
    str
        Without a trailing newline.
    """
    parts = []
    for block in re.split(r"\n[ \t]*\n", text.expandtabs()):
        lines = block.strip("\n").splitlines()
        if not lines:
            continue
        if lines[0].strip() == "\b":
            parts.append("\n".join(indent + line for line in lines[1:]))
            continue
        lead = indent + " " * (len(lines[0]) - len(lines[0].lstrip()))
        parts.append(
            textwrap.fill(
                " ".join(line.strip() for line in lines),
                max(width, len(lead) + 10),
                initial_indent=lead,
                subsequent_indent=lead,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n\n".join(parts)


class HelpFormatter(click.HelpFormatter):
    """click's help layout with :func:`wrap_help` for text and for the option and command
    lists, and docstring literals shown plainly."""

    def write_text(self, text: str) -> None:
        """Write a help paragraph, re-wrapped, at the current indentation."""
        self.write(wrap_help(_plain(text), self.width, " " * self.current_indent) + "\n")

    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        """Write a definition list (options, commands): terms left, their help wrapped to the
        right of the widest term up to ``col_max`` columns (a longer term gets its own line)."""
        rows = list(rows)
        widths = measure_table(rows)
        if len(widths) != 2:
            raise TypeError("Expected two columns for definition list")
        first_col = min(widths[0], col_max) + col_spacing
        margin = " " * (first_col + self.current_indent)
        for first, second in iter_rows(rows, len(widths)):
            self.write(f"{'':>{self.current_indent}}{first}")
            if not second:
                self.write("\n")
                continue
            if term_len(first) <= first_col - col_spacing:
                self.write(" " * (first_col - term_len(first)))
            else:
                self.write("\n" + margin)
            text_width = max(self.width - first_col - 2, 10)
            lines = wrap_help(_plain(second), text_width).splitlines() or [""]
            self.write(lines[0] + "\n")
            for line in lines[1:]:
                self.write((margin + line).rstrip() + "\n")


class Context(click.Context):
    """The context of every ``eams`` command: ``-h`` as well as ``--help``, and
    :class:`HelpFormatter`."""

    formatter_class = HelpFormatter

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("help_option_names") is None and kwargs.get("parent") is None:
            kwargs["help_option_names"] = HELP_OPTIONS  # sub-contexts inherit the parent's
        super().__init__(*args, **kwargs)


def short_help(text: str) -> str:
    """The first sentence of ``text``'s first paragraph (click's rule for a command list's
    line), whole: click would cut it at 45 columns and mark the cut with "...".

    A period ends the sentence when the text ends there or the next word does not start in
    lower case (so "vs." does not)."""
    words = text.partition("\n\n")[0].split()
    if words and words[0] == "\b":
        words = words[1:]
    for i, word in enumerate(words):
        if word.endswith(".") and (i == len(words) - 1 or not words[i + 1][0].islower()):
            return " ".join(words[: i + 1])
    return " ".join(words)


def conform(command: click.Command) -> click.Command:
    """Give ``command`` and every sub-command it already holds the ``eams`` context.

    :func:`run_cli` calls it on what it runs, and the ``eams`` group on each group it loads,
    so a component's plain ``@click.group()`` / ``@click.command()`` needs nothing more. A
    group that loads its own sub-commands lazily calls it on what it loads.

    Returns
    -------
    click.Command
        ``command`` itself.
    """
    command.context_class = Context
    if not command.short_help and command.help:  # a group's list shows it whole, never "..."
        command.short_help = short_help(command.help)
    # click (>= 8.1.8) caches each command's help option, built with the names of the first
    # context it saw: one made before this (a test invoking the command directly) has no -h
    command._help_option = None
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            conform(sub)
    return command


class _LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use (click's documented pattern
    for large command-line applications)."""

    context_class = Context

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attribute = target.split(":")
        return conform(getattr(importlib.import_module(module), attribute))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, but an unknown command's usage error suggests the nearest names."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            name = args[0] if args else ""
            if name.startswith("-") or name in COMMANDS:
                raise
            near = difflib.get_close_matches(name, sorted(COMMANDS), n=2, cutoff=0.6)
            if not near:
                raise
            raise click.UsageError(
                f"No such command {name!r}; did you mean {' or '.join(map(repr, near))}?", ctx
            ) from exc


@click.group(cls=_LazyGroup)
@click.version_option(__version__, prog_name="eams")
def cli() -> None:
    """EAMS: metered power, per-node power models and energy-aware pod placement."""


class ValueType(click.ParamType):
    """An option or argument type that checks a value with a component's own parser.

    The parser's :class:`~eams.errors.EamsError` or :class:`ValueError` becomes a usage
    error (exit 2) naming the option and what was typed, before the command starts.

    Parameters
    ----------
    parse : callable
        ``parse(text)`` → the value, raising on a bad one.
    name : str
        Shown in the help as the metavar (``URL``, ``NAME``, ``SPEC``).
    keep_text : bool
        Pass the text on unchanged (``parse`` only checks it); else pass ``parse``'s result.
    """

    def __init__(self, parse: Callable[[str], Any], name: str, keep_text: bool = False) -> None:
        self.parse, self.name, self.keep_text = parse, name, keep_text

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        """The metavar of the option in usage and help lines."""
        return self.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse ``value`` (a value from a default or a previous conversion passes through)."""
        if not isinstance(value, str):
            return value
        try:
            parsed = self.parse(value)
        except (EamsError, ValueError) as exc:
            self.fail(str(exc), param, ctx)
        return value if self.keep_text else parsed


class FiniteFloatRange(click.FloatRange):
    """click's ``FloatRange`` that also refuses NaN and ±inf (every comparison with NaN is
    false, so ``FloatRange`` lets it through)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Convert and range-check ``value``; a non-finite number is a usage error."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!s} is not a finite number", param, ctx)
        return number


def _in_existing_folder(text: str) -> Path:
    path = Path(text)
    if path.is_dir():
        raise ValueError(f"{text}: is a folder, not a file")
    if not path.parent.is_dir():
        raise ValueError(f"{text}: the folder {path.parent} does not exist")
    return path


OUTPUT_FILE = ValueType(_in_existing_folder, "FILE")
"""A file to write, as a :class:`~pathlib.Path`, in a folder that must exist (nothing is
created behind the user's back: a typo in the folder is a usage error)."""

F = TypeVar("F", bound=Callable[..., Any])


def log_level_option(what: str = "Logging level") -> Callable[[F], F]:
    """The ``--log-level`` option, the same choice in every command that logs.

    One of :data:`LOG_LEVELS`, any letter case, default ``INFO``; the command receives the
    choice as listed, in upper case (``logging.basicConfig(level=...)``; lower it for uvicorn).

    Parameters
    ----------
    what : str
        The option's help line.
    """
    return click.option(
        "--log-level",
        default="INFO",
        show_default=True,
        type=click.Choice(LOG_LEVELS, case_sensitive=False),
        help=what,
    )


def configure_logging(level: str, fmt: str) -> None:
    """Log at ``level`` (a :data:`LOG_LEVELS` name) in ``fmt`` on stderr, for a service.

    httpx logs every request at INFO; a service that polls (the agent's writes, the power
    manager's agent probes) would write one line per request, so below DEBUG it is held to
    WARNING.
    """
    logging.basicConfig(level=level, format=fmt)
    if level != "DEBUG":
        logging.getLogger("httpx").setLevel(logging.WARNING)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _usage_message(exc: click.UsageError) -> str:
    message = _one_line(exc.format_message()).rstrip(".")
    if message[1:2].islower():  # click's capitalised sentence, continued after "error:"
        message = message[0].lower() + message[1:]
    if exc.ctx is not None:
        message += f" (see '{exc.ctx.command_path} -h')"
    return message


def _fail(message: str, status: int) -> NoReturn:
    click.echo(f"eams: error: {message}", err=True)
    sys.exit(status)


def run_cli(
    command: click.Command, prog_name: str | None = None, args: list[str] | None = None
) -> NoReturn:
    """Run ``command`` as a program, with the exit statuses of the module docstring.

    Parameters
    ----------
    command : click.Command
        Made to conform first (:func:`conform`).
    prog_name : str, optional
        The program name in usage lines and messages.
    args : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Raises
    ------
    SystemExit
        Always: 0 done or help shown; 1 an :class:`~eams.errors.EamsError` (one
        ``eams: error: …`` line, no traceback); 2 a usage error (one such line, naming the
        option and pointing to ``-h``); 130 interrupted; or the command's own status.
    """
    conform(command)
    try:
        status = command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # a group without a sub-command
        click.echo(exc.ctx.get_help())
        sys.exit(0)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.UsageError as exc:
        _fail(_usage_message(exc), EXIT_USAGE)
    except click.ClickException as exc:  # e.g. click.FileError: the world, not the call
        _fail(_one_line(exc.format_message()), exc.exit_code)
    except EamsError as exc:
        _fail(_one_line(str(exc)), EXIT_FAILURE)
    sys.exit(status if isinstance(status, int) else 0)


def main() -> None:
    """Console entry point of ``eams`` (see :func:`run_cli` for exit statuses)."""
    run_cli(cli, "eams")
