"""Text lines for a corpus report: one function per part, no I/O."""

from __future__ import annotations

from mini_harness.errors import counted
from mini_harness.replay.corpus.summary import PROBLEMS, UNREADABLE, FileSummary
from mini_harness.replay.corpus.workers import CorpusReport, ToolReport
from mini_harness.replay.history import AgentFigures

_STATUS_WIDTH = len(UNREADABLE)


def report_lines(report: CorpusReport, *, figures: bool = True) -> list[str]:
    """Every file, then (with `figures`, for a fold) the tools, error kinds and agent runs,
    then the files with integrity problems."""
    lines = [line for item in report.files for line in file_lines(item)]
    if figures:
        lines += tool_lines(report)
        lines += error_lines(report)
        lines.append(agent_line(report.agent))
    if report.rerun is not None:
        counts = ", ".join(f"{count} {name}" for name, count in report.rerun.items())
        lines.append(f"Re-run: {counts}")
    damaged = report.damaged()
    lines.append(f"Files with integrity problems: {len(damaged)}")
    lines += [f"  {path}" for path in damaged]
    return lines


def file_lines(item: FileSummary) -> list[str]:
    """`ok          path  2 runs, 40 calls (3 failed), 0 problems`, then shown problems."""
    head = f"{item.status:<{_STATUS_WIDTH}}  {item.path}"
    if item.status == UNREADABLE:
        return [f"{head}  {item.error}"]
    calls = f"{_count(item.calls, 'call')}"
    details = [f"{item.failed:,} failed"] if item.failed else []
    if item.in_doubt:
        details.append(f"{item.in_doubt:,} in doubt")
    if details:
        calls += f" ({', '.join(details)})"
    line = f"{head}  {_count(item.runs, 'run')}, {calls}, {_count(item.problems, 'problem')}"
    if item.rerun is not None:
        outcomes = ", ".join(f"{count} {name}" for name, count in sorted(item.rerun.items()))
        line += f"; re-run: {outcomes or 'no calls'}"
    if item.head_hash is not None:
        line += f"; head {item.head_hash}"
    if item.signed_by:
        line += f"; signed by {', '.join(item.signed_by)}"
    lines = [line]
    if item.status == PROBLEMS:
        lines += [f"    {text}" for text in item.shown_problems]
        hidden = item.problems - len(item.shown_problems)
        if hidden > 0:
            lines.append(f"    ... and {hidden:,} more")
    return lines


def tool_lines(report: CorpusReport) -> list[str]:
    if not report.tools:
        return ["Tools: no calls"]
    width = max(len("Tools"), *(len(tool.name) for tool in report.tools))
    header = (
        f"{'Tools':<{width}}  {'calls':>9}  {'failed':>8}  {'rate':>6}  {'in doubt':>8}"
        f"  {'p50 ms':>10}  {'p95 ms':>10}  {'p99 ms':>10}"
    )
    return [header] + [_tool_row(tool, width) for tool in report.tools]


def _tool_row(tool: ToolReport, width: int) -> str:
    figures = tool.figures
    shown = [_ms(value) for value in tool.percentiles().values()]
    return (
        f"{tool.name:<{width}}  {figures.calls:>9,}  {figures.failed:>8,}  "
        f"{_percent(tool.failure_rate):>6}  {figures.in_doubt:>8,}  "
        + "  ".join(f"{value:>10}" for value in shown)
    )


def error_lines(report: CorpusReport) -> list[str]:
    """Failed calls by error kind (rate among all calls), then by tool and kind."""
    errors = report.errors()
    if not errors:
        return ["Errors: none"]
    calls = report.total("calls")
    lines = ["Errors by kind:"]
    lines += [
        f"  {kind}  {count:,} ({_percent(count / calls)} of calls)"
        for kind, count in errors.items()
    ]
    for tool in report.tools:
        for kind in sorted(tool.figures.errors):
            count = tool.figures.errors[kind]
            rate = _percent(count / tool.figures.calls)
            lines.append(f"  {tool.name} {kind}  {count:,} ({rate} of its calls)")
    return lines


def agent_line(agent: AgentFigures) -> str:
    if not agent.runs and not agent.responses:
        return "Agent runs: none"
    reasons = ", ".join(
        f"{name} {agent.stop_reasons[name]:,}" for name in sorted(agent.stop_reasons)
    )
    usage = agent.usage
    return (
        f"Agent runs: {agent.runs:,} ({reasons or 'none finished'}); "
        f"model responses: {agent.responses:,}; usage: {usage.input_tokens or 0:,} input, "
        f"{usage.output_tokens or 0:,} output, {usage.cached_tokens or 0:,} cached tokens"
    )


def summary_line(report: CorpusReport) -> str:
    files = len(report.files)
    ok = files - report.count(PROBLEMS) - report.count(UNREADABLE)
    failed, in_doubt = report.total("failed"), report.total("in_doubt")
    return (
        f"{_count(files, 'file')}: {ok:,} ok, {report.count(PROBLEMS):,} with problems, "
        f"{report.count(UNREADABLE):,} unreadable; {_count(report.total('events'), 'event')}, "
        f"{_count(report.total('runs'), 'run')}, "
        f"{_count(report.total('calls'), 'call')} ({failed:,} failed, {in_doubt:,} in doubt), "
        f"{_count(report.total('problems'), 'problem')}"
    )


def _count(number: int, noun: str) -> str:
    """`1 run`, `1,048 calls`: the one way counts read, with thousands separators."""
    return counted(1, noun) if number == 1 else counted(f"{number:,}", noun)


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.3f}"
