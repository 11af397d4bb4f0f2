"""`--log` and the options that shape how a command writes it (LogSettings)."""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import click

from mini_harness.cli.options import (
    F,
    SingleOption,
    gathered,
    given_options,
    number_option,
    refuse_without,
)
from mini_harness.cli.output import info, warn
from mini_harness.errors import UsageError
from mini_harness.events import EventSink, NullSink
from mini_harness.transcripts import (
    DEFAULT_FSYNC,
    DEFAULT_MAX_EVENT_BYTES,
    JsonlTranscript,
    Redactor,
)
from mini_harness.transcripts.writer import FsyncMode


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    # A function, not `tuple` itself: attrs reads a converter's signature when the class
    # is made, and a builtin's costs milliseconds of every start-up.
    return tuple(values)


@attrs.frozen
class LogSettings:
    """How a command writes its log: `--fsync`, `--redact-env`, `--redact-pattern`,
    `--max-event-bytes` (None: the writer's default) and `--sign-with` (the signer key
    files that sign its head when the command ends)."""

    fsync: FsyncMode | None = None
    redact_env: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    redact_pattern: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    max_event_bytes: int | None = None
    sign_with: tuple[str, ...] = attrs.field(default=(), converter=_strings)

    def redactor(self, keys: Iterable[str] = ()) -> Redactor | None:
        """The Redactor these settings ask for, which also hides `keys` (the model
        provider's: always redacted, copies included); None when there is nothing to hide."""
        keys = tuple(keys)
        if not (self.redact_env or self.redact_pattern or keys):
            return None
        return Redactor.from_config(
            env_names=self.redact_env, patterns=self.redact_pattern, keys=keys
        )


LOG_SETTINGS = tuple(field.name for field in attrs.fields(LogSettings))
"""The names of the log flags (the options `log_options` adds)."""

FILE_SETTINGS = ("fsync", "max_event_bytes")
"""The log flags that shape only the file: without a log they have nothing to shape.
(`--redact-env` and `--redact-pattern` also redact what a command prints.)"""


def refuse_without_log(ctx: click.Context, *, recorded: bool) -> None:
    """The log flags that shape only the file, given where nothing is `recorded` (no
    `--log PATH` where the log is optional, `--no-log` where it is not), are a usage error."""
    if ctx.params.get("no_log"):
        for spelling in given_options(ctx, FILE_SETTINGS):
            raise UsageError(f"{spelling} cannot be combined with --no-log: nothing is recorded")
    refuse_without(ctx, FILE_SETTINGS, "--log PATH", given=recorded)


def log_option(default: str) -> Callable[[F], F]:
    """The `--log PATH` option (alias `--transcript`) of every command that writes a
    transcript; `default` says where its events go without it."""
    return click.option(
        "--log",
        "--transcript",
        "log",
        cls=SingleOption,
        metavar="PATH",
        type=click.Path(dir_okay=False),
        help="Record the events in this JSONL transcript: appended to, or created with its "
        f"parent directories. Default: {default}.",
    )


no_log_option = click.option(
    "--no-log",
    is_flag=True,
    help="Record nothing: not in the session store, nowhere (the run cannot be resumed).",
)
"""`--no-log` of the commands that record in the session store by default (`run`)."""


def signer_option(spelling: str, name: str, help_text: str) -> Callable[[F], F]:
    """A repeatable option naming signer key files (`--sign-with`, `sign --key`)."""
    return click.option(
        spelling,
        name,
        metavar="SIGNER",
        multiple=True,
        type=click.Path(dir_okay=False),
        help=help_text,
    )


log_options = gathered(
    LogSettings,
    "log_settings",
    click.option(
        "--fsync",
        cls=SingleOption,
        type=click.Choice(["always", "batch", "never"]),
        default=None,
        help="When the transcript is synced to disk: always (every event, before the "
        "tool runs and before the result is printed), batch (the default: by the first event "
        "at least a second after the last sync, and when the log is closed), never (left "
        "to the OS).",
    ),
    click.option(
        "--redact-env",
        metavar="NAME",
        multiple=True,
        help="Write the value of environment variable NAME as [REDACTED] (repeatable).",
    ),
    click.option(
        "--redact-pattern",
        metavar="REGEX",
        multiple=True,
        help="Write every match of REGEX (Python syntax) as [REDACTED] (repeatable).",
    ),
    number_option(
        "--max-event-bytes",
        minimum=1024,
        help_text="Largest line written; a larger input or output is recorded as a marker "
        "with its size and SHA-256 (default 4 MiB).",
    ),
    signer_option(
        "--sign-with",
        "sign_with",
        "When the command ends, sign the transcript's head with this signer key file "
        "(from `transcript keygen`) in PATH.sig beside it (repeatable).",
    ),
)
"""--fsync, --redact-env, --redact-pattern, --max-event-bytes and --sign-with, given to the
command as one LogSettings (`log_settings`)."""


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
        size = "1 byte" if torn.length == 1 else f"{torn.length} bytes"
        were, them = ("was", "it") if torn.length == 1 else ("were", "them")
        events = "a complete event" if torn.length == 1 else "complete events"
        warn(
            f"{sink.path}: {size} at byte {torn.offset} {were} not {events} "
            f"(a torn tail, e.g. left by a crash); moved {them} to {torn.path}"
        )


@contextlib.contextmanager
def opened_log(
    path: str | None,
    settings: LogSettings = LogSettings(),
    keys: Iterable[str] = (),
    say: Callable[[str], None] = info,
) -> Iterator[EventSink]:
    """The sink for `--log`: a JsonlTranscript configured by the log flags (redacting
    `keys` too), closed on the way out, its missing parent directories created first
    (`--log logs/runs/day-04.jsonl`); or, without a path, a sink that discards.

    With `--sign-with`, the keys are read first (a bad one stops the command before it
    does anything) and, once the command ends (the block ends, or exits with any code),
    the transcript's head is signed in PATH.sig and `say` tells it (the commands whose
    standard output is a document or a protocol pass a `say` that writes to stderr). A
    head that cannot be signed is an error, and the exit code of a command that had none.
    """
    signers = _signers(settings.sign_with)
    if path is None:
        if signers:
            raise UsageError("--sign-with needs --log PATH: nothing is recorded to sign")
        yield NullSink()
        return
    parent = os.path.dirname(path)
    if parent:
        # If this fails, opening the file says why (a parent that is a file, no permission).
        with contextlib.suppress(OSError):
            os.makedirs(parent, exist_ok=True)
    transcript = JsonlTranscript(
        path,
        redactor=settings.redactor(keys),
        max_event_bytes=settings.max_event_bytes or DEFAULT_MAX_EVENT_BYTES,
        fsync=settings.fsync or DEFAULT_FSYNC,
    )
    ended: int | None = None  # the command's exit code, when it ended by itself
    try:
        yield transcript
        ended = 0
    except click.exceptions.Exit as exc:
        ended = exc.exit_code
        raise
    finally:
        warn_quarantined(transcript)
        transcript.close()
        if signers and ended is not None:
            from mini_harness.cli.signing import sign_log_head

            failed = sign_log_head(path, signers, say)
            if failed is not None and not ended:
                raise click.exceptions.Exit(failed)  # a success becomes the failure


def _signers(paths: tuple[str, ...]) -> list[Any]:
    if not paths:
        return []
    from mini_harness.cli.signing import signer_keys

    return list(signer_keys(paths))
