"""`mini-harness replay`: fold a transcript into a report, or re-run its calls and compare."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

import attrs
import click
import orjson

from mini_harness.cli import BadUsage, error, info, root_workspace
from mini_harness.cli.agent_replay import print_run_tree, rerun_agent_runs
from mini_harness.cli.coding import print_effects
from mini_harness.cli.corpus import corpus_options, replay_corpus, wants_corpus
from mini_harness.cli.log_options import opened_log
from mini_harness.cli.options import SingleOption, workspace_option
from mini_harness.cli.registry_spec import agent_registry, registry_from
from mini_harness.errors import counted
from mini_harness.events import JsonObject
from mini_harness.replay import (
    OUTCOMES,
    CallRecord,
    Drift,
    RerunOutcome,
    RunInfo,
    RunSummary,
    TranscriptFold,
    TranscriptRerun,
    render,
)
from mini_harness.replay.model import DIVERGED, NOW_FAILS, NOW_SUCCEEDS

PROGRESS_MIN_BYTES = 32 * 1024 * 1024
"""Files smaller than this finish too fast to need a progress bar."""
_PROGRESS_EVERY = 4096  # items between progress checks
_DIFFERING = (DIVERGED, NOW_FAILS, NOW_SUCCEEDS)  # re-run outcomes that fail the replay


@click.command(
    "replay", short_help="Fold a transcript into a report, or --rerun its calls and compare."
)
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@corpus_options
@click.option(
    "--context-report",
    is_flag=True,
    help="Print each run's Context Explorer report, as the live --context-report did.",
)
@click.option(
    "--run",
    "run",
    cls=SingleOption,
    empty_ok=True,
    metavar="ID|INDEX",
    help="Only this run: 1-based index or run id.",
)
@click.option(
    "--step",
    type=click.IntRange(min=1),
    metavar="N",
    help="With --context-report, an agent run's report for step N's request (default: the "
    "last), as the live run printed it.",
)
@click.option(
    "--effects",
    is_flag=True,
    help="List each call's file effects (sha256 before and after) and approval decisions.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
@click.option("--rerun", is_flag=True, help="Dispatch each recorded call again and compare.")
@click.option(
    "--registry",
    metavar="MODULE:ATTRIBUTE",
    help="With --rerun: the ToolRegistry (or a function returning one) to re-run against. "
    "Default: the built-in tools.",
)
@workspace_option(
    "With --rerun: the directory the built-in file tools work in (default: the one given "
    "before the subcommand, else the current directory)."
)
@click.option(
    "--allow-side-effects",
    is_flag=True,
    help="With --rerun: also run tools not marked readOnlyHint or idempotentHint.",
)
@click.option(
    "--log",
    metavar="OUT",
    type=click.Path(dir_okay=False),
    help="With --rerun: record the re-run as a new transcript (for an agent run: where "
    "--live-model writes its new run; default: appended to PATH).",
)
@click.option(
    "--live-model",
    is_flag=True,
    help="With --rerun of an agent run: where the record stops answering (divergence), go on "
    "with a live model as a new run that names the replayed one (forkedFrom).",
)
@click.option("--model", metavar="PROVIDER:MODEL", help="With --live-model: the provider.")
def replay_command(  # noqa: PLR0917 - click passes each option
    paths: tuple[str, ...],
    workers: int | None,
    ray_address: str | None,
    context_report: bool,
    run: str | None,
    step: int | None,
    effects: bool,
    as_json: bool,
    rerun: bool,
    registry: str | None,
    workspace: str | None,
    allow_side_effects: bool,
    log: str | None,
    live_model: bool,
    model: str | None,
) -> None:
    """Fold a transcript back into runs, calls and problems, never calling a handler.

    With --rerun, dispatch each recorded call again against the current registry and report
    it as matched, diverged (with a diff), now-fails, now-succeeds or skipped. Only tools the
    current registry marks readOnlyHint or idempotentHint run again, unless
    --allow-side-effects.

    Exit codes: 0 the log is sound (and every re-run call matched or was skipped); 1 the log
    has problems (integrity, protocol, torn tail, in-doubt calls) or a re-run call differs;
    2 the transcript cannot be read or the arguments are wrong; 130 interrupted.

    Several paths, a directory (every *.jsonl below it) or a glob make one corpus report:
    a line per file and totals per tool, error kind and stop reason; the exit code is the
    worst file's. --workers N folds them in N processes, --ray as Ray tasks.
    """
    if step is not None and not context_report:
        raise BadUsage("--step needs --context-report")
    if effects:
        if rerun or as_json or context_report:
            raise BadUsage("--effects cannot be combined with --rerun, --json or --context-report")
        if wants_corpus(paths, workers, ray_address):
            raise BadUsage("--effects applies to one transcript, not to a corpus")
        print_effects(paths[0])
        return
    if not rerun:
        for flag, value in (
            ("--registry", registry),
            ("--workspace", workspace),
            ("--allow-side-effects", allow_side_effects),
            ("--log", log),
            ("--live-model", live_model),
            ("--model", model),
        ):
            if value:
                raise BadUsage(f"{flag} needs --rerun")
    if registry is not None and workspace is not None:
        raise BadUsage(
            "--workspace applies to the built-in tools; it cannot be used with --registry"
        )
    # `mini-harness --workspace DIR replay ...` sets it on the root command.
    workspace = workspace or root_workspace()
    if wants_corpus(paths, workers, ray_address):
        refused = {"--run": run, "--context-report": context_report, "--step": step, "--log": log}
        replay_corpus(
            paths,
            as_json=as_json,
            workers=workers,
            ray_address=ray_address,
            rerun=rerun,
            registry=registry,
            workspace=workspace,
            allow_side_effects=allow_side_effects,
            refused=refused,
        )
    (path,) = paths
    if log is not None and _same_file(log, path):
        raise BadUsage("--log must name a new file, not the transcript being replayed")
    fold = TranscriptFold(path, run=run, context_reports=context_report)
    output = _JsonOutput if as_json else _TextOutput
    out = output(fold, rerun=rerun, registry_spec=registry, step=step)
    if not rerun:
        code = _drive(fold, iter(fold), out, size=_size(path))
        if not as_json and code != 130:
            print_run_tree(path)
        raise click.exceptions.Exit(code)
    tools = registry_from(registry) if registry else agent_registry(workspace)
    # Agent runs are replayed offline with their recorded model answers (cli/agent_replay.py).
    agent_code = rerun_agent_runs(
        path,
        run,
        tools,
        allow_side_effects=allow_side_effects,
        as_json=as_json,
        live_model=(model or "") if live_model else None,
        log=log,
    )
    if agent_code is not None:
        raise click.exceptions.Exit(agent_code)
    with opened_log(log, {}) as sink:
        runner = TranscriptRerun(fold, tools, allow_side_effects=allow_side_effects, sink=sink)
        code = _drive(fold, iter(runner), out, size=_size(path))
    if log is not None:
        info(f"Re-run recorded in {log}")
    raise click.exceptions.Exit(code)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # the reader reports it


def _drive(fold: TranscriptFold, items: Any, out: _Output, *, size: int) -> int:
    """Feed every item to `out`, with progress on a terminal; Ctrl-C ends with what we have."""
    progress = _Progress(fold, size) if size >= PROGRESS_MIN_BYTES else None
    handlers: dict[type, Callable[[Any], None]] = {
        RunInfo: out.run,
        CallRecord: out.call,
        RerunOutcome: out.outcome,
        Drift: out.drift,
    }
    count = 0
    try:
        for item in items:
            handlers[type(item)](item)
            count += 1
            if progress is not None and count % _PROGRESS_EVERY == 0:
                progress.update()
    except KeyboardInterrupt:
        out.flush()
        if progress is not None:
            progress.clear()
        out.finish(interrupted=True)
        error(f"interrupted at line {fold.reader.records_read}: the report above is partial")
        return 130
    except BaseException:
        out.flush()  # what was found before a damaged line is still shown
        if progress is not None:
            progress.clear()
        raise
    if progress is not None:
        progress.clear()
    return out.finish(interrupted=False)


class _Progress:
    """`[mini-harness] replay: 42% of 310 MB` on stderr, only when stderr is a terminal."""

    def __init__(self, fold: TranscriptFold, size: int, stream: TextIO | None = None) -> None:
        self.fold = fold
        self.size = size
        self.stream: TextIO = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.shown = -1

    def update(self) -> None:
        if not self.enabled:
            return
        percent = self.fold.offset * 100 // max(self.size, 1)
        if percent != self.shown:
            self.shown = percent
            mb = self.size / 1_000_000
            self.stream.write(f"\r[mini-harness] replay: {percent}% of {mb:.0f} MB")
            self.stream.flush()

    def clear(self) -> None:
        if self.enabled and self.shown >= 0:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


class _Output:
    """Where items go as they are found; `finish` prints the end and returns the exit code."""

    def __init__(
        self,
        fold: TranscriptFold,
        *,
        rerun: bool,
        registry_spec: str | None = None,
        step: int | None = None,
    ) -> None:
        self.fold = fold
        self.rerun = rerun
        self.counts: dict[str, int] = {}
        self.drifted: list[Drift] = []
        self.registry_spec = registry_spec  # --registry, if given
        self.unknown_tools: dict[str, None] = {}  # tools re-run calls found missing, in order
        self.unknown_calls = 0
        self.step = step  # --step, for agent runs' context reports

    def summaries(self) -> list[RunSummary]:
        """The runs' summaries; an agent run's report is that of its last request (or of
        --step N's), as the live run printed it, rebuilt in the same pass as the fold."""
        summaries = list(self.fold.summaries())
        if not self.fold.context_reports:
            return summaries
        agent_runs = {run.run_id: run for run in self.fold.agent_runs()}
        return [
            attrs.evolve(s, context_report=agent_runs[s.info.run_id].context_report(self.step))
            if s.info.run_id in agent_runs
            else s
            for s in summaries
        ]

    def run(self, item: RunInfo) -> None:
        """A run started."""

    def call(self, item: CallRecord) -> None:
        """A call ended (fold mode)."""

    def outcome(self, item: RerunOutcome) -> None:
        self.counts[item.outcome] = self.counts.get(item.outcome, 0) + 1
        current = item.current
        unknown = isinstance(current, dict) and current.get("kind") == "unknown_tool"
        if unknown and item.outcome != "matched":
            self.unknown_tools[item.call.name] = None
            self.unknown_calls += 1

    def missing_registry(self) -> str | None:
        """When every call that ran again found its tool missing: which registry to pass."""
        ran = sum(count for name, count in self.counts.items() if name != "skipped")
        if not ran or self.unknown_calls != ran:
            return None
        names = ", ".join(self.unknown_tools)
        where = (
            f"the registry {self.registry_spec} has none of the recorded tools ({names})"
            if self.registry_spec
            else f"the built-in tools do not include the recorded ones ({names})"
        )
        return (
            f"{where}: the transcript was probably recorded with other tools; pass their "
            "registry with --registry MODULE:ATTR"
        )

    def drift(self, item: Drift) -> None:
        self.drifted.append(item)

    def flush(self) -> None:
        return None

    def finish(self, *, interrupted: bool) -> int:
        raise NotImplementedError

    def exit_code(self, problems: int) -> int:
        differing = sum(self.counts.get(name, 0) for name in _DIFFERING)
        return 1 if problems or self.fold.totals().in_doubt or differing else 0


class _TextOutput(_Output):
    def __init__(self, fold: TranscriptFold, **settings: Any) -> None:
        super().__init__(fold, **settings)
        # Call lines are written in batches: one write per line costs as much as the fold.
        self.pending: list[str] = []
        what = "re-run against the current registry" if self.rerun else "fold: no handler is called"
        # Said with the first output, so that a file that cannot be read prints nothing here.
        self.header: str | None = f"Replaying {fold.path} ({what})"

    def write(self, text: str) -> None:
        self.pending.append(text)
        self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        if self.header is not None:
            info(self.header)
            self.header = None
        sys.stdout.write("".join(self.pending))
        self.pending.clear()

    def run(self, item: RunInfo) -> None:
        self.write(render.run_line(item) + "\n")

    def call(self, item: CallRecord) -> None:
        pending = self.pending
        pending.append(render.call_line(item) + "\n")
        if len(pending) >= 1024:
            self.flush()

    def outcome(self, item: RerunOutcome) -> None:
        super().outcome(item)
        self.write("\n".join(render.outcome_lines(item)) + "\n")

    def drift(self, item: Drift) -> None:
        super().drift(item)
        self.write(render.drift_line(item) + "\n")

    def finish(self, *, interrupted: bool) -> int:
        fold = self.fold
        problems = fold.problems()
        lines = render.summary_lines(
            self.summaries(), problems, context_reports=fold.context_reports
        )
        self.write("\n".join(lines) + "\n")
        info(render.totals_line(fold.totals(), len(problems)))
        if self.rerun:
            info(render.rerun_line(self.counts, len(self.drifted)))
        code = self.exit_code(len(problems))
        if code and not interrupted:
            error(self.explain(len(problems)))
        return code

    def explain(self, problems: int) -> str:
        differing = {name: self.counts[name] for name in _DIFFERING if self.counts.get(name)}
        if differing:
            parts = ", ".join(f"{count} {name}" for name, count in differing.items())
            hint = self.missing_registry()
            return f"re-run differs from the record: {parts}" + (f"; {hint}" if hint else "")
        in_doubt = self.fold.totals().in_doubt
        return (
            f"the log has {counted(problems, 'problem')} and {counted(in_doubt, 'call')} in doubt"
        )


class _JsonOutput(_Output):
    """One JSON document, written as it goes: calls stream out one per line."""

    def __init__(self, fold: TranscriptFold, **settings: Any) -> None:
        super().__init__(fold, **settings)
        self.write = sys.stdout.write
        self.started = False
        self.first_call = True

    def _start(self) -> None:
        if not self.started:
            head = {"path": str(self.fold.path), "transcriptId": self.fold.transcript_id}
            self.write(orjson.dumps(head).decode()[:-1] + ',"calls":[')
            self.started = True

    def _emit_call(self, entry: JsonObject) -> None:
        self._start()
        self.write(("\n" if self.first_call else ",\n") + orjson.dumps(entry).decode())
        self.first_call = False

    def run(self, item: RunInfo) -> None:
        self._start()

    def call(self, item: CallRecord) -> None:
        self._emit_call(item.to_json())

    def outcome(self, item: RerunOutcome) -> None:
        super().outcome(item)
        self._emit_call({**item.call.to_json(), "rerun": item.to_json()})

    def finish(self, *, interrupted: bool) -> int:
        self._start()
        fold = self.fold
        problems = fold.problems()
        code = self.exit_code(len(problems))
        tail: JsonObject = {
            "runs": [run.to_json() for run in self.summaries()],
            "problems": [problem.to_json() for problem in problems],
            "totals": fold.totals().to_json(),
            "drift": [drift.to_json() for drift in self.drifted],
            "rerun": {name: self.counts.get(name, 0) for name in OUTCOMES} if self.rerun else None,
            "interrupted": interrupted,
            "exitCode": 130 if interrupted else code,
        }
        self.write("\n]," + orjson.dumps(tail).decode()[1:] + "\n")
        return code
