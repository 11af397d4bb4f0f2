"""`mini-harness export otel PATH...`: the runs of transcripts as OpenTelemetry spans, sent
to a collector over OTLP/HTTP or printed as OTLP JSON; and `--otel`, the same spans sent
live as a run goes (`otel_option`, `live_export`).

Nothing of OpenTelemetry is imported unless one of them is used.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import click

from mini_harness.cli.options import F, SingleOption, json_option
from mini_harness.cli.output import echo_json, info, warn
from mini_harness.errors import TelemetryError, UsageError, counted
from mini_harness.transcripts import JsonlTranscript

if TYPE_CHECKING:
    from mini_harness.events import EventSink
    from mini_harness.export.live import LiveExport
    from mini_harness.export.spans import SpanData
    from mini_harness.transcripts import Redactor

_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


@click.group("export", short_help="Export recorded runs to other tools.")
def export_group() -> None:
    """Export the runs of transcripts to other tools."""


@export_group.command("otel", short_help="Send runs to an OpenTelemetry collector.")
@click.argument("paths", metavar="[PATH...]", nargs=-1)
@click.option(
    "--endpoint",
    cls=SingleOption,
    metavar="URL",
    help="The collector's OTLP/HTTP URL: a base URL (`/v1/traces` is added) or the traces "
    "URL itself. Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else "
    "OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318.",
)
@click.option(
    "--headers",
    metavar="NAME=VALUE",
    multiple=True,
    help="A header of every request (repeatable; added to OTEL_EXPORTER_OTLP_HEADERS).",
)
@click.option(
    "--content",
    is_flag=True,
    help="Add what was said: messages, system instructions, tool definitions, tool "
    "arguments and results (also with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    "=true).",
)
@json_option("Print the spans as OTLP JSON instead of sending them.")
def otel_command(
    paths: tuple[str, ...],
    *,
    endpoint: str | None,
    headers: tuple[str, ...],
    content: bool,
    as_json: bool,
) -> None:
    """Send the runs of the transcripts PATH... (files, directories holding *.jsonl, globs,
    ids of runs in the session store; without PATH, the whole session store) to an
    OpenTelemetry collector as spans in the GenAI conventions, over OTLP/HTTP.

    Each run is a trace whose id is the run's id, and every span's id comes from the
    transcript: exporting a transcript again gives the same spans. See docs/otel.md for
    the spans and their attributes. Needs the `otel` extra:

    \b
      pip install "mini-harness[otel]"

    Exit codes: 0 sent (or printed); 1 the collector did not take them; 2 usage errors,
    a transcript that cannot be read, or the extra missing.
    """
    from mini_harness.export import otlp

    otlp.require_sdk()
    if as_json and (endpoint is not None or headers):
        raise UsageError(
            "--json prints the spans instead of sending them: drop --endpoint/--headers"
        )
    collector = None if as_json else otlp.Collector.resolve(endpoint, headers)
    with_content = content or otlp.content_wanted(os.environ)
    spans: list[SpanData] = []
    runs = files = 0
    for path in _transcripts(paths):
        found, count = _spans(path, content=with_content)
        spans += found
        runs += count
        files += 1
    if as_json:
        document = otlp.otlp_json(spans)
        echo_json(document, indent=True)
        return
    assert collector is not None
    otlp.send(collector, spans)
    info(
        f"Sent {counted(len(spans), 'span')} of {counted(runs, 'run')} "
        f"({counted(files, 'transcript')}) to {collector.endpoint}"
    )


def _transcripts(paths: Iterable[str]) -> Iterator[str]:
    """The files PATH... names (directories and globs expanded); one that names nothing
    is a usage error."""
    from mini_harness.cli.settings import session_store
    from mini_harness.cli.stored import locate
    from mini_harness.replay.corpus import expand_paths

    given = [locate(path).path for path in paths] or [str(session_store().root)]
    if "-" in given:
        if len(given) > 1:
            raise UsageError("standard input (-) cannot be exported with other paths")
        yield "-"
        return
    for found in expand_paths(given):
        if found.missing is not None:
            raise UsageError(f"cannot read transcripts: {found.missing}")
        yield found.path


def _spans(path: str, *, content: bool) -> tuple[list[SpanData], int]:
    """The spans of one transcript and how many runs it has; damage that stopped the
    reading is said, and what was read before it is exported."""
    from mini_harness.export.mapping import history_spans
    from mini_harness.replay.history import CHAIN_KINDS, read_history

    history = read_history(path, requests=True, detail=True, damage=True)
    for problem in history.problems:
        if problem.kind in CHAIN_KINDS:
            warn(f"{history.name}: {problem.describe()}")
    return history_spans(history, content=content), len(history.runs)


# --- live export (`--otel`) -----------------------------------------------------------


def otel_option(command: F) -> F:
    """The `--otel` flag of run, resume, fork and mcp, passed as `otel`."""
    return click.option(
        "--otel",
        is_flag=True,
        help="Send the run's spans to an OpenTelemetry collector as it goes (OTLP/HTTP; "
        "where: as `export otel`). Also on when OTEL_EXPORTER_OTLP_ENDPOINT is set.",
    )(command)


def live_export(flag: bool, redactor: Redactor | None = None) -> LiveExport | None:
    """The live export a command asked for: with `--otel`, or with an endpoint in the
    environment (None: neither, or OTEL_SDK_DISABLED). `redactor` is the run's (its log's
    redaction, the provider's key), applied to every span."""
    wanted = flag or any(os.environ.get(name, "").strip() for name in _ENDPOINT_VARIABLES)
    if not wanted or os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    from mini_harness.export import otlp

    try:
        otlp.require_sdk()
    except TelemetryError as exc:
        if flag:
            raise
        warn(f"{exc.message}; the run is not exported (an OTLP endpoint is set)")
        return None
    from mini_harness.export.live import LiveExport

    return LiveExport(
        otlp.Collector.resolve(),
        content=otlp.content_wanted(os.environ),
        redact=redactor.redact_text if redactor is not None and redactor.active else None,
        warn=warn,
    )


@contextlib.contextmanager
def exported(live: LiveExport | None, sink: EventSink) -> Iterator[EventSink]:
    """`sink` (an opened log), and the live export fed from it while the block runs
    (closed after it)."""
    if live is None:
        yield sink
        return
    try:
        yield live.wrap(sink, sink if isinstance(sink, JsonlTranscript) else None)
    finally:
        live.close()
