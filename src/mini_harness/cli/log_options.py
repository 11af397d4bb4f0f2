"""`--log` and the options that shape how the root command and `mcp` write it."""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from mini_harness.cli.options import SingleOption
from mini_harness.cli.output import PREFIX
from mini_harness.events import EventSink, NullSink
from mini_harness.transcripts import JsonlTranscript, Redactor

__all__ = [
    "DEFAULT_FSYNC",
    "LOG_FLAGS",
    "given_log_flags",
    "log_option",
    "log_options",
    "open_log",
    "opened_log",
    "redactor_for",
    "warn_quarantined",
]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_FSYNC = "batch"
"""The API's default (JsonlTranscript) as well."""

LOG_FLAGS = {
    "fsync": "--fsync",
    "redact_env": "--redact-env",
    "redact_pattern": "--redact-pattern",
    "max_event_bytes": "--max-event-bytes",
}


def log_option(help_text: str) -> Callable[[F], F]:
    """The `--log PATH` option (alias `--transcript`) of the commands that record a run."""
    return click.option(
        "--log",
        "--transcript",
        "log",
        cls=SingleOption,
        metavar="PATH",
        type=click.Path(dir_okay=False),
        help=help_text,
    )


def log_options(command: F) -> F:
    """Add --fsync, --redact-env, --redact-pattern and --max-event-bytes to a command."""
    decorators = [
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
        click.option(
            "--max-event-bytes",
            cls=SingleOption,
            type=click.IntRange(min=1024),
            default=None,
            metavar="N",
            help="Largest line written; a larger input or output is recorded as a marker "
            "with its size and SHA-256 (default 4 MiB).",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def given_log_flags(settings: dict[str, Any]) -> list[str]:
    """The log flags the user gave, by their command-line names."""
    return [flag for key, flag in LOG_FLAGS.items() if settings.get(key)]


def redactor_for(settings: dict[str, Any]) -> Redactor | None:
    """The Redactor the redaction flags ask for, or None when none was given."""
    if not (settings.get("redact_env") or settings.get("redact_pattern")):
        return None
    return Redactor.from_config(
        env_names=settings.get("redact_env") or (),
        patterns=settings.get("redact_pattern") or (),
    )


def open_log(path: str, settings: dict[str, Any]) -> JsonlTranscript:
    """A JsonlTranscript for `path` configured by the log flags; missing parent directories
    are created first (`--log logs/runs/day-04.jsonl`)."""
    parent = os.path.dirname(path)
    if parent:
        # If this fails, opening the file says why (a parent that is a file, no permission).
        with contextlib.suppress(OSError):
            os.makedirs(parent, exist_ok=True)
    extra: dict[str, Any] = {}
    redactor = redactor_for(settings)
    if redactor is not None:
        extra["redactor"] = redactor
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
        size = "1 byte" if torn.length == 1 else f"{torn.length} bytes"
        were, them = ("was", "it") if torn.length == 1 else ("were", "them")
        events = "a complete event" if torn.length == 1 else "complete events"
        click.echo(
            f"{PREFIX} Warning: {sink.path}: {size} at byte {torn.offset} {were} not {events} "
            f"(a torn tail, e.g. left by a crash); moved {them} to {torn.path}",
            err=True,
        )


@contextlib.contextmanager
def opened_log(path: str | None, settings: dict[str, Any]) -> Iterator[EventSink]:
    """The sink for `--log`: its transcript, closed on the way out; or one that discards."""
    if path is None:
        yield NullSink()
        return
    transcript = open_log(path, settings)
    try:
        yield transcript
    finally:
        warn_quarantined(transcript)
        transcript.close()
