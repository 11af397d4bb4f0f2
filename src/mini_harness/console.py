"""The console entry point, and the parts of the CLI that do not need click.

`mini-harness --tool NAME [--tool-input JSON] [--log PATH] [--fsync MODE]`, the call an
agent or a script makes over and over, is parsed here without importing click (click alone
costs several times the interpreter's own start-up). Anything else (another option, a
subcommand, --help, a value this parser is not sure of) goes to the click command in
mini_harness.cli, which also does all of the checking and error reporting for it: this
parser never reports an error itself, it only declines. Both routes run `run_dispatch`
and print through `echo`, so they print the same bytes and exit with the same codes.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

from mini_harness.errors import OutputError

if TYPE_CHECKING:
    from mini_harness.events import EventSink

PREFIX = "[mini-harness]"
# The default of the API (JsonlTranscript) as well; kept literal here so that importing
# the CLI does not import the transcript layer.
DEFAULT_FSYNC = "batch"
FSYNC_MODES = ("always", "batch", "never")


class UsageProblem(Exception):
    """A usage error whose message says all there is to say (exit 2, no --help hint)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ExitWith(Exception):
    """Leave with this exit code; what to say was already said."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print a line as click.echo would, without importing click for plain ASCII text.

    click.echo also strips ANSI escapes when the stream is not a terminal and rewraps
    streams whose encoding it judges wrong; a message where either could matter (one with
    ESC or any non-ASCII character) is handed to click.echo itself.
    """
    if not message.isascii() or "\x1b" in message:
        import click

        click.echo(message, err=err, nl=nl)
        return
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    stream.write(message + "\n" if nl else message)
    stream.flush()


def info(message: str) -> None:
    echo(f"{PREFIX} {message}")


def error(message: str) -> None:
    echo(f"{PREFIX} Error: {message}", err=True)


def fail(message: str, code: int) -> NoReturn:
    """Print an error line and exit with `code` (1: the work failed, 2: usage)."""
    error(message)
    raise ExitWith(code)


# --- the root command's work -------------------------------------------------------


def parse_tool_input(raw: str | None) -> Any:
    import orjson

    if raw is None:
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise UsageProblem("--tool-input must be valid JSON") from None
    if _LONG_DIGITS.search(raw):
        _refuse_wide_integers(raw)
    return value


# orjson turns integers wider than 64 bits into floats without a word; a run of 20+ digits
# is the only way such an integer can appear, so only then is the input parsed again.
_LONG_DIGITS = re.compile(r"\d{20,}")


def _refuse_wide_integers(raw: str) -> None:
    import json

    def parse_int(text: str) -> int:
        number = int(text)
        if not -(2**63) <= number < 2**64:
            raise UsageProblem(f"--tool-input: integer {text} does not fit in 64 bits")
        return number

    json.loads(raw, parse_int=parse_int)


def run_dispatch(
    tool: str,
    raw_input: str | None,
    *,
    context_report: bool,
    log: str | None,
    workspace: str | None = None,
    settings: dict[str, Any] | None = None,
) -> None:
    """Dispatch one tool, print the result lines; ExitWith(1) if the tool failed."""
    import orjson

    from mini_harness.errors import ToolCallError
    from mini_harness.runtime import ToolRuntime
    from mini_harness.tools import default_registry

    tool_input = parse_tool_input(raw_input)
    registry = default_registry(workspace)
    with opened_log(log, settings or {}) as sink:
        runtime = ToolRuntime(registry, sink)
        try:
            result = runtime.dispatch(tool, tool_input)
        except ToolCallError as exc:
            fail(exc.message, 1)
    shown = result.display_json()
    info(f"Task: Dispatch tool: {tool}")
    info("Model provider: none")
    info("Manual tool dispatch completed.")
    info(f"Tool result: {orjson.dumps(shown).decode()}")
    if log is not None:
        info(f"Transcript: {log} (run {runtime.run_id})")
    if context_report:
        from mini_harness.runtime import dispatch_context, render_context_report

        echo("")
        echo(render_context_report(dispatch_context(runtime.tools_snapshot, shown)), nl=False)


# --- --log -------------------------------------------------------------------------


def open_log(path: str, settings: dict[str, Any]) -> Any:
    """A JsonlTranscript for `path` configured by the log flags."""
    from mini_harness.transcripts import JsonlTranscript

    extra: dict[str, Any] = {}
    if settings.get("redact_env") or settings.get("redact_pattern"):
        from mini_harness.transcripts import Redactor  # only then: it compiles regexes

        extra["redactor"] = Redactor.from_config(
            env_names=settings.get("redact_env") or (),
            patterns=settings.get("redact_pattern") or (),
        )
    if settings.get("max_event_bytes"):
        extra["max_event_bytes"] = settings["max_event_bytes"]
    extra["fsync"] = settings.get("fsync") or DEFAULT_FSYNC
    return JsonlTranscript(path, **extra)


_WARNED: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def warn_quarantined(sink: Any) -> None:
    """Say on stderr what the writer set aside that was not said yet.

    The writer moves a torn tail (a crash's leftover) to `<log>.torn-<offset>` on its own;
    the user must learn of it, and where it went.
    """
    moved = list(getattr(sink, "quarantined", ()))
    if not moved:
        return
    already = _WARNED.get(sink, 0)
    _WARNED[sink] = len(moved)
    for torn in moved[already:]:
        echo(
            f"{PREFIX} Warning: {sink.path}: {torn.length} bytes at byte {torn.offset} were "
            f"not complete events (a torn tail, e.g. left by a crash); moved them to {torn.path}",
            err=True,
        )


@contextlib.contextmanager
def opened_log(path: str | None, settings: dict[str, Any]) -> Iterator[EventSink]:
    """The sink for `--log`: its transcript, closed on the way out; or one that discards."""
    if path is None:
        from mini_harness.events import NullSink

        yield NullSink()
        return
    transcript = open_log(path, settings)
    try:
        yield transcript
    finally:
        warn_quarantined(transcript)
        transcript.close()


# --- the entry point ---------------------------------------------------------------

# The options the quick route understands, by every name they have.
_QUICK_OPTIONS = {
    "--tool": "tool",
    "--tool-input": "tool_input",
    "--log": "log",
    "--transcript": "log",
    "--fsync": "fsync",
}


def quick_arguments(args: list[str]) -> dict[str, str] | None:
    """The options of a plain root dispatch, or None if click should look at `args`.

    Accepts `--tool NAME` (required), `--tool-input JSON`, `--log PATH` / `--transcript PATH`
    and `--fsync MODE`, each at most once, as `--opt value` or `--opt=value`, with values
    that are not empty and do not start with `-`. Declines anything else, and every case
    where click would report a problem (a --log path that is a directory or unreadable,
    --fsync without --log or with another mode), so that click reports it.
    """
    values: dict[str, str] = {}
    index = 0
    while index < len(args):
        name, equals, value = args[index].partition("=")
        key = _QUICK_OPTIONS.get(name)
        if key is None or key in values:
            return None
        if not equals:
            index += 1
            if index == len(args):
                return None
            value = args[index]
        if not value or value.startswith("-"):
            return None
        values[key] = value
        index += 1
    if "tool" not in values:
        return None
    if "fsync" in values and (values["fsync"] not in FSYNC_MODES or "log" not in values):
        return None
    log = values.get("log")
    if log is not None:
        try:
            mode = os.stat(log).st_mode
        except OSError:
            return values  # a new file: click's Path check has nothing to say either
        if stat.S_ISDIR(mode) or not os.access(log, os.R_OK):
            return None
    return values


def main() -> None:
    """`mini-harness`: a plain dispatch takes the quick route, everything else click's."""
    # Shell completion asks click for its script through this variable, whatever the args.
    values = None if "_MINI_HARNESS_COMPLETE" in os.environ else quick_arguments(sys.argv[1:])
    guard_streams()
    code: int | str | None
    try:
        try:
            if values is None:
                from mini_harness.cli import cli

                cli()  # exits through SystemExit
                code = 0
            else:
                code = run_quick(values)
        except SystemExit as done:
            code = done.code
        # What is still buffered goes out now, while a failure can still be said: at exit
        # the interpreter would only print an "Exception ignored" traceback (exit 120).
        sys.stdout.flush()
    except OutputError as exc:
        _quiet([sys.stdout])
        error(f"cannot write the output: {exc.reason}")
        code = 1
    except BrokenPipeError:  # the reader stopped early (either route, or the last flush):
        _quiet([sys.stdout, sys.stderr])  # as click does, exit 1 and say nothing more
        code = 1
    sys.exit(code)


class _Guarded:
    """sys.stdout or sys.stderr for the console script (and the binary buffer under each),
    telling their failures apart from every other OSError.

    On standard output a failed write or flush raises OutputError; a closed pipe stays a
    BrokenPipeError, which both routes end quietly (the reader stopped on purpose). On
    standard error it is dropped, and the stream pointed at /dev/null: what cannot be shown
    must not change what the command does or its exit code. The buffer is guarded too:
    click writes through a text wrapper of its own around it when the stream's encoding
    cannot hold what it prints (an ASCII locale).
    """

    def __init__(self, stream: Any, *, diagnostics: bool) -> None:
        self._stream = stream
        self._diagnostics = diagnostics
        self._buffer: _Guarded | None = None

    @property
    def buffer(self) -> _Guarded:
        if self._buffer is None:
            self._buffer = _Guarded(self._stream.buffer, diagnostics=self._diagnostics)
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
            _quiet([self._stream])
            return
        if isinstance(exc, BrokenPipeError):
            raise exc
        raise OutputError(exc.strerror or str(exc)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_streams() -> None:
    """Put `_Guarded` around sys.stdout and sys.stderr (once)."""
    if sys.stdout is not None and not isinstance(sys.stdout, _Guarded):
        sys.stdout = cast(TextIO, _Guarded(sys.stdout, diagnostics=False))
    if sys.stderr is not None and not isinstance(sys.stderr, _Guarded):
        sys.stderr = cast(TextIO, _Guarded(sys.stderr, diagnostics=True))


def _quiet(streams: list[Any]) -> None:
    """Point these streams' descriptors at /dev/null, so that nothing fails again when the
    interpreter flushes them on its way out."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in streams:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


def run_quick(values: dict[str, str]) -> int:
    """Run a plain dispatch; report failures the way the click command does."""
    from mini_harness.errors import MiniHarnessError

    settings = {"fsync": values["fsync"]} if "fsync" in values else {}
    try:
        run_dispatch(
            values["tool"],
            values.get("tool_input"),
            context_report=False,
            log=values.get("log"),
            settings=settings,
        )
    except UsageProblem as exc:
        error(exc.message)
        return 2
    except ExitWith as exc:
        return exc.code
    except MiniHarnessError as exc:
        error(exc.message)
        return 2
    except (EOFError, KeyboardInterrupt):
        echo(err=True)  # as click does: end the line the terminal's ^C is on
        error("interrupted")
        return 130
    return 0
