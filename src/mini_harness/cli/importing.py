"""`mini-harness import`: other agents' sessions (Codex, Claude Code) as transcripts, one
per session, in the session store (or `-o DIR`); and a foreign file given where a
transcript is expected, imported into a temporary transcript first (`foreign_transcript`)."""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mini_harness.cli.options import json_option
from mini_harness.cli.output import echo_json, info, warn
from mini_harness.errors import ExitCode, MiniHarnessError, SourceError, UsageError, exit_code_of

if TYPE_CHECKING:
    from mini_harness.interop import ImportResult
    from mini_harness.replay import Call, RerunAs, Run
    from mini_harness.store import SessionStore

_PART = ".jsonl.part"  # a transcript being written (the store lists *.jsonl only)


def default_sources(env: dict[str, str] | None = None) -> list[str]:
    """The session stores of Codex (`$CODEX_HOME/sessions`, default `~/.codex/sessions`)
    and Claude Code (`$CLAUDE_CONFIG_DIR/projects`, default `~/.claude/projects`) that
    exist."""
    env = dict(os.environ) if env is None else env
    home = Path.home()
    codex = Path(env.get("CODEX_HOME") or home / ".codex") / "sessions"
    claude = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects"
    return [str(place) for place in (codex, claude) if place.is_dir()]


def _started(result: ImportResult) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(result.started.replace("Z", "+00:00"))
    except ValueError:
        return None


def _same_import(path: Path, result: ImportResult) -> bool:
    """Whether the transcript at `path` was imported from the same bytes (every file of
    the session with the same SHA-256)."""
    from mini_harness.replay.history import read_history

    try:
        history = read_history(path, damage=True)
    except MiniHarnessError:
        return False
    before = sorted(
        (run.imported.part or "", run.imported.sha256)
        for run in history.runs
        if run.imported is not None
    )
    now = sorted((source.part or "", source.sha256) for source in result.sources)
    return before == now


def import_into(store: SessionStore, source: str, fmt: str) -> tuple[str, Path, ImportResult]:
    """Import one session into `store`: ("imported" | "updated" | "unchanged", where,
    what). The transcript is written beside its place and moved there whole."""
    from mini_harness.interop import import_session
    from mini_harness.transcripts import JsonlTranscript

    store.make()
    handle, part = tempfile.mkstemp(suffix=_PART, dir=store.root)
    os.close(handle)
    os.unlink(part)
    try:
        sink = JsonlTranscript(part, fsync="never")
        try:
            result = import_session(source, sink, fmt=fmt)
        finally:
            sink.close()
        if not result.run_ids:
            return "empty", Path(source), result
        place = store.new_transcript(result.run_id, _started(result))
        if place.exists() and _same_import(place, result):
            return "unchanged", place, result
        status = "updated" if place.exists() else "imported"
        os.replace(part, place)
        return status, place, result
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part)


@click.command(
    "import", short_help="Read Codex and Claude Code sessions into transcripts (the store)."
)
@click.argument("paths", nargs=-1)
@click.option(
    "--from",
    "fmt",
    type=click.Choice(["auto", "codex", "claude"]),
    default="auto",
    show_default=True,
    help="The sessions' format (auto: told from each file's first line).",
)
@click.option(
    "-o",
    "--output",
    "output",
    metavar="DIR",
    help="Write the transcripts under DIR (laid out as the session store) instead of the "
    "session store.",
)
@json_option("One JSON document: each session imported.")
def import_command(paths: tuple[str, ...], fmt: str, output: str | None, as_json: bool) -> None:
    """Import other agents' sessions: Codex rollouts (`rollout-*.jsonl`, `.jsonl.zst`) and
    Claude Code sessions (with their subagents), one transcript per session, each run
    recording where it came from (format, path, SHA-256, size, importer). PATHS are files,
    directories or globs; without any, ~/.codex/sessions and ~/.claude/projects. A session
    imported before from the same bytes is left as it is. Lines that cannot be imported
    are reported with their file and line; the rest imports (exit 1 when there were any)."""
    from mini_harness.interop import find_sessions
    from mini_harness.store import SessionStore

    if not paths:
        paths = tuple(default_sources())
        if not paths:
            raise UsageError(
                "no PATH given, and neither ~/.codex/sessions nor ~/.claude/projects exists"
            )
    files = find_sessions(paths)
    if output is not None:
        store = SessionStore(output)
    else:
        from mini_harness.cli.settings import session_store

        store = session_store()
    rows: list[dict[str, Any]] = []
    code = ExitCode.OK
    for source in files:
        try:
            status, place, result = import_into(store, source, fmt)
        except SourceError as exc:
            warn(exc.message) if not as_json else None
            rows.append({"source": source, "status": "unreadable", "error": exc.message})
            code = max(code, exit_code_of(unreadable=True))
            continue
        row = {"status": status, "transcript": str(place), **result.to_json()}
        rows.append(row)
        code = max(code, exit_code_of(failed=bool(result.problems)))
        if as_json:
            continue
        usage = result.usage
        branches = (
            f" ({result.branches} left by a rewind, as forked runs)" if result.branches else ""
        )
        info(
            f"{status.capitalize()}: {source} ({result.format}) -> {place}: "
            f"{len(result.run_ids)} run(s){branches}, {result.calls} call(s), {result.results} "
            f"with a result; tokens in {usage.input_tokens or 0:,}, "
            f"out {usage.output_tokens or 0:,}"
        )
        for problem in result.problems:
            warn(problem.describe())
    if as_json:
        echo_json({"sessions": rows}, indent=True)
    else:
        done = sum(1 for row in rows if row["status"] in ("imported", "updated"))
        same = sum(1 for row in rows if row["status"] == "unchanged")
        info(f"{len(rows)} session(s): {done} imported, {same} unchanged, into {store.root}")
    raise click.exceptions.Exit(int(code))


def imported_call(run: Run, call: Call) -> RerunAs | str | None:
    """What `replay --rerun` dispatches for `call` of `run` (a Translate): for a run imported
    from another agent's session, the mini-harness tool its tool maps to, or why none does
    (interop/translate.py); None for a run of mini-harness's own."""
    if run.imported is None:
        return None
    from mini_harness.interop.translate import rerun_as
    from mini_harness.replay import RerunAs

    cwd = run.workspace.path if run.workspace is not None else None
    mapped = rerun_as(run.imported.format, call.name, call.input, cwd)
    return mapped if isinstance(mapped, str) else RerunAs(*mapped)


_temporary: list[str] = []


def _remove_temporary() -> None:
    for directory in _temporary:
        shutil.rmtree(directory, ignore_errors=True)


def foreign_transcript(path: str) -> str | None:
    """A transcript of the Codex or Claude Code session in `path`, imported into a
    temporary directory removed at exit; None when `path` is not such a file."""
    from mini_harness.interop import detect, import_session
    from mini_harness.transcripts import JsonlTranscript

    if not os.path.isfile(path):
        return None
    try:
        fmt = detect(path)
    except SourceError:
        return None
    if fmt is None:
        return None
    if not _temporary:
        atexit.register(_remove_temporary)
    directory = tempfile.mkdtemp(prefix="mini-harness-import-")
    _temporary.append(directory)
    out = os.path.join(directory, "imported.jsonl")
    sink = JsonlTranscript(out, fsync="never")
    try:
        result = import_session(path, sink, fmt=fmt)
    finally:
        sink.close()
    for problem in result.problems:
        warn(problem.describe())
    return out
