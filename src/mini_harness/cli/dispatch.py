"""The root command's work: dispatch one tool and print what happened."""

from __future__ import annotations

import json
import re
from typing import Any

import click
import orjson

from mini_harness.cli.log_options import opened_log
from mini_harness.cli.output import BadUsage, info
from mini_harness.events import JsonValue
from mini_harness.runtime import (
    ToolRegistry,
    ToolRuntime,
    dispatch_context,
    render_context_report,
)

# orjson turns integers wider than 64 bits into floats without a word; a run of 20+ digits
# is the only way such an integer can appear, so only then is the input parsed again.
_LONG_DIGITS = re.compile(r"\d{20,}")


def parse_tool_input(raw: str | None) -> JsonValue:
    """The value of `--tool-input` ({} when it was not given); BadUsage if it is not JSON."""
    if raw is None:
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BadUsage("--tool-input must be valid JSON") from None
    if _LONG_DIGITS.search(raw):
        _refuse_wide_integers(raw)
    return value


def _refuse_wide_integers(raw: str) -> None:
    def parse_int(text: str) -> int:
        number = int(text)
        if not -(2**63) <= number < 2**64:
            raise BadUsage(f"--tool-input: integer {text} does not fit in 64 bits")
        return number

    json.loads(raw, parse_int=parse_int)


def run_dispatch(
    registry: ToolRegistry,
    tool: str,
    raw_input: str | None,
    *,
    context_report: bool,
    log: str | None,
    settings: dict[str, Any],
) -> None:
    """Dispatch one tool and print the result lines; a failure raises its ToolCallError."""
    tool_input = parse_tool_input(raw_input)
    with opened_log(log, settings) as sink:
        runtime = ToolRuntime(registry, sink)
        result = runtime.dispatch(tool, tool_input)
    shown = result.display_json()
    info(f"Task: Dispatch tool: {tool}")
    info("Model provider: none")
    info("Manual tool dispatch completed.")
    info(f"Tool result: {orjson.dumps(shown).decode()}")
    if log is not None:
        info(f"Transcript: {log} (run {runtime.run_id})")
    if context_report:
        click.echo("")
        report = render_context_report(dispatch_context(runtime.tools_snapshot, shown))
        click.echo(report, nl=False)
