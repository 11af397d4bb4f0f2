"""`--log` and the options that shape how the root command and `mcp` write it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

# Opening the log is shared with the click-free quick route: it lives in console.py.
from mini_harness.console import DEFAULT_FSYNC, open_log, opened_log, warn_quarantined

__all__ = [
    "DEFAULT_FSYNC",
    "LOG_FLAGS",
    "given_log_flags",
    "log_option",
    "log_options",
    "open_log",
    "opened_log",
    "warn_quarantined",
]

F = TypeVar("F", bound=Callable[..., Any])

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
        metavar="PATH",
        type=click.Path(dir_okay=False),
        help=help_text,
    )


def log_options(command: F) -> F:
    """Add --fsync, --redact-env, --redact-pattern and --max-event-bytes to a command."""
    decorators = [
        click.option(
            "--fsync",
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
