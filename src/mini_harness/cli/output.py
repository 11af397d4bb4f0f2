"""What the CLI prints, and what happens when it cannot be printed.

Informational lines go to stdout as `[mini-harness] <message>`, errors to stderr as
`[mini-harness] Error: <message>`, and `exit_code_for` turns whatever stopped a command
into its exit status.

Everything a command prints goes through here (`info`, `aside`, `warn`, `error`, `echo` for
other text, `echo_json` for JSON): the one place where what it prints is made safe to show.
What the command's one Redactor hides (`protect`: for a command that acts, its log's,
cli/acting.py; for every command that prints what a transcript recorded, the configured
providers' keys) is redacted, copies of keys included, and control characters are shown
escaped (`printable`; JSON keeps its value, `printable_json`). Standard output that
cannot be written (a full disk, a device error) is one error line and exit 1; a reader
that stopped early (`| head -1`) ends the command quietly; standard error that cannot be
written changes nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

import click
import orjson

from mini_harness.errors import ExitCode, MiniHarnessError, OutputError, interruption
from mini_harness.runtime.terminal import printable, printable_json

if TYPE_CHECKING:
    from mini_harness.transcripts import Redactor

PREFIX = "[mini-harness]"


class _Protected:
    """The running command's one Redactor (None: nothing to hide yet)."""

    redactor: Redactor | None = None


def protect(redactor: Redactor | None) -> None:
    """Hide what `redactor` hides (the command's log's: its provider keys and their
    copies, `--redact-env`, `--redact-pattern`) from everything this command prints from
    now on. A command has one: the last one given stands."""
    _Protected.redactor = redactor if redactor is not None and redactor.active else None


def protected() -> Redactor | None:
    """The running command's Redactor (None: nothing to hide)."""
    return _Protected.redactor


def protect_configured_keys() -> None:
    """Protect the API keys of every provider the environment configures, whichever model
    the command uses (or none): for the commands that print what a transcript recorded."""
    from mini_harness.events.redaction import configured_keys
    from mini_harness.transcripts import Redactor

    protect(Redactor.from_config(keys=configured_keys(os.environ)))


def forget_keys() -> None:
    """A new command protects nothing yet (the CLI's entry calls this)."""
    _Protected.redactor = None


def redacted(text: str) -> str:
    """`text` with what the command protects redacted (not made printable: `shown`)."""
    redactor = _Protected.redactor
    return text if redactor is None else redactor.redact_text(text)


def shown(text: str, *, colours: bool = False, multiline: bool = True) -> str:
    """`text` as it may be printed: what the command protects redacted, control characters
    escaped (with `colours`, our own views' colour codes kept; without `multiline`, on one
    line)."""
    return printable(redacted(text), colours=colours, multiline=multiline)


# What these print may hold a model's or a tool's text: shown escaped, never obeyed.


def echo(text: str, *, err: bool = False, nl: bool = True, colours: bool = False) -> None:
    """Print text a person reads (a report, a timeline, a diff) made safe by `shown`."""
    click.echo(shown(text, colours=colours), err=err, nl=nl)


def echo_json(value: Any, *, indent: bool = False) -> None:
    """Print a JSON value on standard output (`indent`: two spaces a level): every string
    in it redacted as the command protects (the value, not its text: a secret a JSON
    escape would change is still found), and the characters a terminal acts on written
    as JSON escapes (the same JSON value)."""
    click.echo(_json_text(value, indent=indent))


def echo_json_lines(values: Iterable[Any]) -> None:
    """Print JSON values on standard output, one a line (JSON Lines), as `echo_json` does."""
    click.echo("".join(_json_text(value) + "\n" for value in values), nl=False)


def echo_json_stream(text: str) -> None:
    """Print a piece of a JSON document written as it goes (`replay --json`'s calls),
    made of values `redacted_value` gave, with no line break of its own."""
    click.echo(printable_json(text), nl=False)


def redacted_value(value: Any) -> Any:
    """A JSON value with every string in it redacted as the command protects."""
    redactor = _Protected.redactor
    return value if redactor is None else redactor.redact_value(value)


def _json_text(value: Any, *, indent: bool = False) -> str:
    option = orjson.OPT_INDENT_2 if indent else 0
    return printable_json(orjson.dumps(redacted_value(value), option=option).decode())


def info(message: str, *, err: bool = False) -> None:
    echo(f"{PREFIX} {message}", err=err)


def aside(message: str) -> None:
    """An informational line on stderr: for commands whose standard output is a document
    (`--json`) or a protocol (`mcp`)."""
    echo(f"{PREFIX} {message}", err=True)


def warn(message: str) -> None:
    echo(f"{PREFIX} Warning: {message}", err=True)


def error(message: str) -> None:
    echo(f"{PREFIX} Error: {message}", err=True)


def rewritable(stream: object) -> bool:
    """Whether `stream` is a terminal that takes ANSI sequences (a line redrawn in place,
    colour): a terminal whose TERM is not `dumb` (Emacs' shell, some CI logs)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


def use_colour(stream: object) -> bool:
    """ANSI colour only on a terminal that takes it, and never when NO_COLOR is set
    (https://no-color.org)."""
    return rewritable(stream) and not os.environ.get("NO_COLOR")


def columns(fallback: int) -> int:
    """How wide a line may be: COLUMNS, else the terminal's width, else `fallback` (output
    that goes to a file or a pipe)."""
    return known_columns() or fallback


def known_columns() -> int | None:
    """COLUMNS, else the width of the terminal standard output is; None for output that
    goes to a file or a pipe without COLUMNS."""
    import shutil  # only a command that fits lines to the width needs it

    width = shutil.get_terminal_size((0, 0)).columns
    return width if width > 0 and (os.environ.get("COLUMNS") or sys.stdout.isatty()) else None


def describe(exc: BaseException) -> str:
    """`ValueError: no tools today`, or the exception's type alone when it says nothing."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def fail(message: str, code: ExitCode) -> NoReturn:
    """Print an error line and exit with `code`."""
    error(message)
    raise click.exceptions.Exit(code)


def verdict(code: int, message: str) -> NoReturn:
    """End the command with `code`, `message` being its error line unless it is 0."""
    if code:
        error(message)
    raise click.exceptions.Exit(code)


def exit_code_for(exc: BaseException) -> int:
    """Say what went wrong and return the exit code: the one place errors become codes.

    Click's usage errors are USAGE, with a hint to --help; its other exceptions carry
    their code; Ctrl-C is INTERRUPTED; our own errors carry theirs
    (`MiniHarnessError.exit_code`: a UsageError is USAGE and its message says all).
    Anything else is a bug: raised again.
    """
    if isinstance(exc, click.UsageError):
        error(exc.format_message())
        hint = exc.ctx.command_path if exc.ctx else "mini-harness"
        click.echo(f"{PREFIX} Try '{hint} --help' for help.", err=True)
        return ExitCode.USAGE
    if isinstance(exc, click.ClickException):
        error(exc.format_message())
        return exc.exit_code
    if isinstance(exc, click.Abort):
        cause = exc.__cause__
        error(interruption(cause) if isinstance(cause, KeyboardInterrupt) else "interrupted")
        return ExitCode.INTERRUPTED
    if isinstance(exc, MiniHarnessError):
        error(exc.message)
        return exc.exit_code
    raise exc


class GuardedStream:
    """sys.stdout or sys.stderr of the console script (and the binary buffer under each),
    telling their failures apart from every other OSError.

    On standard output a failed write or flush raises OutputError; a closed pipe stays a
    BrokenPipeError, ended quietly (the reader stopped on purpose). On standard error it is
    dropped and the stream pointed at /dev/null: what cannot be shown must not change what
    the command does or its exit code. The buffer is guarded too: click writes through a
    text wrapper of its own around it when the stream's encoding cannot hold what it prints
    (an ASCII locale).
    """

    def __init__(self, stream: Any, *, diagnostics: bool) -> None:
        self._stream = stream
        self._diagnostics = diagnostics
        self._buffer: GuardedStream | None = None

    @property
    def buffer(self) -> GuardedStream:
        if self._buffer is None:
            self._buffer = GuardedStream(self._stream.buffer, diagnostics=self._diagnostics)
        return self._buffer

    def write(self, data: Any) -> int:
        try:
            written: int = self._stream.write(data)
        except OSError as exc:
            self._failed(exc)
            return len(data)
        return written

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        if self._diagnostics:
            quiet([self._stream])
            return
        if isinstance(exc, BrokenPipeError):
            raise exc
        raise OutputError(exc.strerror or str(exc)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_streams() -> None:
    """Put `GuardedStream` around sys.stdout and sys.stderr (once)."""
    if sys.stdout is not None and not isinstance(sys.stdout, GuardedStream):
        sys.stdout = cast(TextIO, GuardedStream(sys.stdout, diagnostics=False))
    if sys.stderr is not None and not isinstance(sys.stderr, GuardedStream):
        sys.stderr = cast(TextIO, GuardedStream(sys.stderr, diagnostics=True))


def quiet(streams: list[Any]) -> None:
    """Point these streams' descriptors at /dev/null, so that nothing fails again when the
    interpreter flushes them on its way out."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in streams:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
