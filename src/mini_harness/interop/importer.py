"""Import one session of another agent (Codex, Claude Code) into events: which format a
file is, the files a session spans, the run ids (the same for the same session, so an
import can be repeated), and what was imported."""

from __future__ import annotations

import glob
import hashlib
import io
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson

from mini_harness._version import __version__
from mini_harness.errors import SourceError
from mini_harness.events import EventSink, ImportSource, RunOrigin, Usage, to_wire
from mini_harness.interop import claude, codex
from mini_harness.interop.build import ImportedRun
from mini_harness.interop.source import ZSTD_SUFFIX, SourceFile, SourceProblem, _zstd_reader

FORMATS = ("codex", "claude")
IMPORTER = f"mini-harness {__version__}"
_SUFFIXES = (".jsonl", ".jsonl" + ZSTD_SUFFIX)


@attrs.frozen
class ImportResult:
    """What one session's import wrote: its runs (the session's first), the calls and
    their results, the usage summed, the source lines kept and the problems per line."""

    path: str
    format: str
    run_ids: tuple[str, ...]
    started: str
    calls: int
    results: int
    usage: Usage
    problems: tuple[SourceProblem, ...]
    sources: tuple[ImportSource, ...]
    branches: int = 0  # runs of branches a rewind left (Claude Code), among run_ids

    @property
    def run_id(self) -> str:
        return self.run_ids[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.path,
            "format": self.format,
            "runIds": list(self.run_ids),
            "calls": self.calls,
            "results": self.results,
            "abandonedBranches": self.branches,
            "usage": to_wire(self.usage),
            "problems": [
                {"file": p.path, "line": p.line, "reason": p.reason} for p in self.problems
            ],
        }


def run_id_for(fmt: str, session: str, part: str = "") -> str:
    """A run's id, the same for the same session (and part) on every import."""
    return hashlib.sha256(f"import:{fmt}:{session}:{part}".encode()).hexdigest()[:32]


def _first_line(path: str) -> dict[str, Any] | None:
    """The first JSON object of a file (None: none in its first lines)."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    with raw:
        stream: Any = raw
        if path.endswith(ZSTD_SUFFIX):
            stream = io.BufferedReader(_zstd_reader(raw, path))
        try:
            for _ in range(20):
                line = stream.readline(1 << 24)
                if not line:
                    return None
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    return value
        except OSError as exc:
            raise SourceError(f"cannot read {path}: {exc}") from None
        except Exception as exc:  # zstd's own errors
            raise SourceError(f"cannot read {path}: {exc}") from None
    return None


def detect(path: str) -> str | None:
    """ "codex" or "claude" when the file is one of theirs, else None (a mini-harness
    transcript, or anything else)."""
    first = _first_line(path)
    if first is None or first.get("type") == "TranscriptStarted":
        return None
    if codex.looks_like(first):
        return codex.FORMAT
    if claude.looks_like(first):
        return claude.FORMAT
    return None


def is_subagent_file(path: str) -> bool:
    """A Claude Code subagent's file: imported with its session, never on its own."""
    parts = Path(path).parts
    return len(parts) >= 2 and parts[-2] == "subagents" and Path(path).name.startswith("agent-")


def find_sessions(paths: Iterable[str]) -> list[str]:
    """Session files named by `paths` (files, directories searched below, globs), sorted;
    subagents' files are left to their sessions. SourceError when a path names none."""
    found: set[str] = set()
    for given in paths:
        if os.path.isdir(given):
            matches = [
                os.path.join(directory, name)
                for directory, _dirs, names in os.walk(given)
                for name in names
                if name.endswith(_SUFFIXES)
            ]
        elif os.path.exists(given):
            matches = [given]
        else:
            matches = [m for m in glob.glob(given, recursive=True) if os.path.isfile(m)]
            if not matches:
                raise SourceError(f"cannot read {given}: no such file, directory or match")
        found.update(m for m in matches if m == given or not is_subagent_file(m))
    return sorted(found)


def _subagent_files(path: str) -> list[str]:
    """A Claude Code session's subagents' files (`<session>/subagents/agent-*.jsonl`)."""
    base = Path(path)
    stem = base.name.removesuffix(ZSTD_SUFFIX).removesuffix(".jsonl")
    directory = base.parent / stem / "subagents"
    if not directory.is_dir():
        return []
    return sorted(str(p) for p in directory.iterdir() if p.name.endswith(_SUFFIXES))


def _hash_of(path: str) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def import_session(path: str, sink: EventSink, *, fmt: str = "auto") -> ImportResult:
    """Write the session in `path` (and, for Claude Code, its subagents' files) to `sink`
    as runs of events. SourceError when the file cannot be read or is of no known format."""
    if fmt == "auto":
        found = detect(path)
        if found is None:
            raise SourceError(
                f"cannot import {path}: it is neither a Codex rollout nor a Claude Code "
                "session (give --from codex|claude if it is one)"
            )
        fmt = found
    if fmt not in FORMATS:
        raise SourceError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)} or auto")
    # The file's hash is in its runs' RunStarted, written before the file is read to
    # the end: it is hashed first.
    sha256, size = _hash_of(path)
    if fmt == codex.FORMAT:
        return _codex(path, sink, sha256, size)
    return _claude(path, sink, sha256, size)


def _stem(path: str) -> str:
    return Path(path).name.removesuffix(ZSTD_SUFFIX).removesuffix(".jsonl")


def _result(
    path: str,
    fmt: str,
    runs: list[ImportedRun],
    problems: list[SourceProblem],
    branches: int = 0,
) -> ImportResult:
    usage = Usage()
    for run in runs:
        usage += run.usage
    return ImportResult(
        path=path,
        format=fmt,
        run_ids=tuple(run.run_id for run in runs),
        started=runs[0].start.ts if runs else "",
        calls=sum(run.calls for run in runs),
        results=sum(run.results for run in runs),
        usage=usage,
        problems=tuple(problems),
        sources=tuple(run.imported for run in runs),
        branches=branches,
    )


def _codex(path: str, sink: EventSink, sha256: str, size: int) -> ImportResult:
    source = SourceFile(path)

    def make_run(meta: dict[str, Any], ts: Any) -> ImportedRun:
        session: str = meta["id"] if isinstance(meta.get("id"), str) else _stem(path)
        version = meta.get("cli_version")
        imported = ImportSource(
            codex.FORMAT,
            path,
            sha256,
            size,
            IMPORTER,
            format_version=version if isinstance(version, str) else None,
            session_id=session,
        )
        start = codex.start_of(
            meta, ts, run_id=run_id_for(codex.FORMAT, session), imported=imported
        )
        return ImportedRun(sink, start)

    run = codex.CodexReader(source, None, make_run).read()
    if run is None:
        source.problem(max(source.lines, 1), "no session: the file has no rollout line")
        return _result(path, codex.FORMAT, [], source.problems)
    return _result(path, codex.FORMAT, [run], source.problems)


def _claude(path: str, sink: EventSink, sha256: str, size: int) -> ImportResult:
    problems: list[SourceProblem] = []
    runs: list[ImportedRun] = []
    session = _stem(path)

    def maker(file: str, digest: str, length: int, part: str | None) -> claude.MakeRun:
        def make_run(
            line: dict[str, Any], origin: RunOrigin | None, key: str, *, forked: bool = False
        ) -> ImportedRun:
            version = line.get("version")
            imported = ImportSource(
                claude.FORMAT,
                file,
                digest,
                length,
                IMPORTER,
                format_version=version if isinstance(version, str) else None,
                session_id=session,
                part=part,
            )
            run_key = ":".join(k for k in (part or "", key) if k)
            start = claude.start_of(
                line,
                run_id=run_id_for(claude.FORMAT, session, run_key),
                imported=imported,
                spawned_by=None if forked else origin,
                forked_from=origin if forked else None,
            )
            return ImportedRun(sink, start)

        return make_run

    source = SourceFile(path)
    reader = claude.ClaudeReader(source, maker(path, sha256, size, None))
    runs += reader.read()
    problems += source.problems
    branches = len(reader.forks)
    main = reader.main
    for file in _subagent_files(path):
        part = os.path.relpath(file, Path(path).parent / session)
        agent = _stem(file).removeprefix("agent-")
        origin = None
        if main is not None:
            step = main.call_steps.get(reader.agents.get(agent, ""), 0)
            origin = RunOrigin(main.run_id, step)
        digest, length = _hash_of(file)
        sub = SourceFile(file)
        sub_reader = claude.ClaudeReader(
            sub, maker(file, digest, length, part), spawned_by=origin, sidechain_file=True
        )
        runs += sub_reader.read()
        problems += sub.problems
    if not runs:
        problems.append(SourceProblem(path, 1, "no session: the file has no line"))
    return _result(path, claude.FORMAT, runs, problems, branches)


def sources_of(result: ImportResult) -> Iterator[tuple[str, str]]:
    """(part or path, sha256) of every file an import read."""
    for source in result.sources:
        yield source.part or source.path, source.sha256
