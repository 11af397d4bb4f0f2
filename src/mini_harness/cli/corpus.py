"""`replay PATH...` and `transcript verify PATH...` over a corpus: many files, one report.

The two commands call `is_corpus` on their paths; several paths, a directory or a glob
(or --workers / --ray) come here, one file keeps its own report. The report lists every
file (sorted by path) and the corpus totals; it is the same whatever the number of
workers, so only the progress line on stderr says how the work was spread.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

import click

from mini_harness.cli.importing import imported_call
from mini_harness.cli.options import number_option
from mini_harness.cli.output import echo, echo_json, error, info, rewritable
from mini_harness.errors import UsageError, counted, exit_code_of

if TYPE_CHECKING:
    from mini_harness.cli.rerun import RerunOptions
    from mini_harness.replay.corpus import CorpusFile, CorpusReport
    from mini_harness.replay.corpus.summary import FileSummary, SummaryOptions
    from mini_harness.runtime import ToolRegistry
    from mini_harness.transcripts.signing import TrustedKeys

F = TypeVar("F", bound=Callable[..., Any])
LOCAL_RAY = "local"
"""`--ray` with no address: start a local Ray instance for this command."""


def corpus_options(command: F) -> F:
    """--workers and --ray, for a command that takes PATH..."""
    command = click.option(
        "--ray",
        "ray_address",
        metavar="ADDRESS",
        is_flag=False,
        flag_value=LOCAL_RAY,
        default=None,
        callback=_ray_address,
        help="Fold the files as Ray tasks: 'auto' (this machine's cluster), a cluster "
        "address, or no value for a local instance. Needs the 'ray' extra; the files must "
        "be at the same path on every node. Put it after the paths, or write --ray=ADDRESS.",
    )(command)
    return number_option(
        "--workers",
        help_text="With several files: fold them in N processes (default: the number of cores).",
    )(command)


def _ray_address(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a path or glob taken as the address (`--ray DIR`), before PATH... is checked."""
    looks_like_path = value is not None and (os.path.exists(value) or bool(set("*?[") & set(value)))
    if value is not None and value != LOCAL_RAY and looks_like_path:
        raise UsageError(
            f"--ray took {value} as a cluster address: put --ray after the paths, "
            "or write --ray=ADDRESS"
        )
    return value


def wants_corpus(paths: Sequence[str], workers: int | None, ray_address: str | None) -> bool:
    """Several paths, a directory, a glob, or an explicit --workers / --ray."""
    from mini_harness.replay.corpus import is_corpus

    return is_corpus(paths) or workers is not None or ray_address is not None


def replay_corpus(
    paths: Sequence[str],
    *,
    as_json: bool,
    workers: int | None,
    ray_address: str | None,
    rerun: RerunOptions,
    refused: Mapping[str, object],
) -> NoReturn:
    """`replay` over a corpus; `refused` holds the one-file options given (an error). A
    re-run's calls pass today's policy (--approve), as one file's do."""
    from mini_harness.replay.corpus.summary import FOLD, SummaryOptions

    for flag, value in refused.items():
        if value:
            raise UsageError(f"{flag} applies to one transcript, not to a corpus")
    factory = _registry_factory(rerun.registry_spec, rerun.root) if rerun.rerun else None
    translate = imported_call if rerun.rerun else None
    approver = rerun.approver(rerun.session(rerun.root)) if rerun.rerun else None
    options = SummaryOptions(FOLD, factory, rerun.allow_side_effects, translate, approver)
    _run(paths, options, as_json=as_json, workers=workers, ray_address=ray_address)


def verify_corpus(
    paths: Sequence[str],
    *,
    as_json: bool,
    workers: int | None,
    ray_address: str | None,
    trusted: TrustedKeys | None = None,
) -> NoReturn:
    """`transcript verify` over a corpus; with `trusted` keys, each file against the head
    signed in its note beside it (PATH.sig)."""
    from mini_harness.replay.corpus.summary import VERIFY, SummaryOptions

    options = SummaryOptions(VERIFY, trusted=trusted)
    _run(paths, options, as_json=as_json, workers=workers, ray_address=ray_address)


def _registry_factory(spec: str | None, workspace: str | None) -> Callable[[], ToolRegistry]:
    """A picklable function building the re-run registry in each worker; tried here first,
    so a bad --registry is one usage error, not one per file."""
    from mini_harness.cli.registry_spec import agent_registry, load_registry, registry_from

    if spec is not None:
        registry_from(spec)  # with --debug, a failing import shows its traceback
        return functools.partial(load_registry, spec)
    # The built-in tools one file's re-run gets; absolute: workers (and Ray nodes) do not
    # run in this directory.
    return functools.partial(agent_registry, os.path.abspath(workspace or os.getcwd()))


def _run(
    paths: Sequence[str],
    options: SummaryOptions,
    *,
    as_json: bool,
    workers: int | None,
    ray_address: str | None,
) -> NoReturn:
    from mini_harness.replay.corpus import expand_paths, fold_files
    from mini_harness.replay.corpus.summary import VERIFY

    if ray_address is not None and workers is not None:
        raise UsageError("--workers applies to local processes; with --ray, Ray places the work")
    if ray_address is not None:
        from mini_harness.replay.corpus.ray import import_ray

        import_ray(local=ray_address == LOCAL_RAY)  # no Ray: one error line, nothing else
    files = expand_paths(paths)
    if not as_json:
        if options.mode == VERIFY and options.trusted is not None:
            doing = "Verifying {} (chain, protocol, in-doubt calls and signed heads)"
        elif options.mode == VERIFY:
            doing = "Verifying {} (chain, protocol and in-doubt calls)"
        elif options.rerun is not None:
            doing = "Replaying {} (re-run against the current registry)"
        else:
            doing = "Replaying {} (fold: no handler is called)"
        info(doing.format(counted(len(files), "transcript")))
    progress = CorpusProgress(files)
    try:
        if ray_address is None:
            report = fold_files(files, options, workers=workers, progress=progress.file_done)
        else:
            from mini_harness.replay.corpus.ray import fold_files_ray

            address = None if ray_address == LOCAL_RAY else ray_address
            report = fold_files_ray(files, options, address=address, progress=progress.file_done)
    except KeyboardInterrupt:
        progress.clear()
        error(f"interrupted after {progress.done} of {len(files)} files: no report")
        raise click.exceptions.Exit(exit_code_of(interrupted=True)) from None
    progress.clear()
    if as_json:
        echo_json(report.to_json())
    else:
        from mini_harness.replay.corpus.render import report_lines, summary_line

        lines = report_lines(report, figures=options.mode != VERIFY)
        echo("".join(line + "\n" for line in lines), nl=False)
        info(summary_line(report))
        if report.exit_code:
            error(_explain(report))
    raise click.exceptions.Exit(report.exit_code)


def _explain(report: CorpusReport) -> str:
    from mini_harness.replay.corpus import PROBLEMS, UNREADABLE

    files = counted(len(report.files), "file")
    parts = []
    if report.count(UNREADABLE):
        parts.append(f"{report.count(UNREADABLE)} of {files} cannot be read")
    if problems := report.count(PROBLEMS):
        verb = "has" if problems == 1 else "have"
        parts.append(f"{problems} of {files} {verb} problems, calls in doubt or re-run differences")
    return "; ".join(parts)


class CorpusProgress:
    """`[mini-harness] 120/2000 files, 1.4M events/s, ETA 0:42` on stderr, on a terminal only.

    The ETA assumes the bytes still to read go as fast as those read so far.
    """

    def __init__(
        self,
        files: Sequence[CorpusFile],
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream: TextIO = stream if stream is not None else sys.stderr
        self.enabled = rewritable(self.stream)
        self.sizes = {item.path: item.size for item in files}
        self.total_files = len(files)
        self.total_bytes = sum(self.sizes.values())
        self.clock = clock
        self.started = clock()
        self.shown_at = -1.0
        self.done = 0
        self.events = 0
        self.bytes = 0
        self.drawn = False

    def file_done(self, summary: FileSummary) -> None:
        self.done += 1
        self.events += summary.events
        self.bytes += self.sizes.get(summary.path, 0)
        if not self.enabled:
            return
        now = self.clock()
        if now - self.shown_at < 0.2 and self.done < self.total_files:
            return
        self.shown_at = now
        self.stream.write("\r\x1b[K" + self.line(now))
        self.stream.flush()
        self.drawn = True

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.events / elapsed
        left = self.total_bytes - self.bytes
        if self.bytes and left > 0:
            seconds = int(elapsed * left / self.bytes)
            eta = f"ETA {seconds // 60}:{seconds % 60:02d}"
        else:
            eta = "ETA 0:00" if not left else "ETA --:--"
        return f"[mini-harness] {self.done}/{self.total_files} files, {_rate(rate)} events/s, {eta}"

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False


def _rate(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.1f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"
