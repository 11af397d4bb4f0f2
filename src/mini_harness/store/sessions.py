"""The session store: one transcript per session, found again by what its runs recorded.

A session is the transcript a run started without `--log` is recorded in, at
`<root>/YYYY/MM/DD/<YYYYMMDDTHHMMSSZ>-<run id>.jsonl` (UTC, when it started); the runs
that resume or fork it are appended to the same file. The store is transcripts and
nothing else: no index to go stale. Every question (which runs, of which workspace, the
newest, which run an id prefix names) is answered by folding the files with the one fold,
by what their RunStarted lines recorded (the workspace's path), never by a file's name
or directory. Nothing is deleted but by `prune`, which says what it removed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from mini_harness.errors import TranscriptError
from mini_harness.events import JsonObject
from mini_harness.transcripts.claim import is_held
from mini_harness.transcripts.skim import skim_runs

if TYPE_CHECKING:  # the fold loads when the store is read, not when a run is recorded in it
    from mini_harness.replay.history import Run

SUFFIX = ".jsonl"


def _utc(ts: str) -> dt.datetime:
    """A recorded `ts` (ISO 8601, Z) as an aware datetime."""
    return dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))


def iso(when: dt.datetime) -> str:
    """`when` as recorded timestamps are written, so that they compare as strings."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@attrs.frozen
class StoredRun:
    """One run of a transcript in the store, as its history has it: what its RunStarted
    and RunFinished say (its calls are not counted: the store may read no more)."""

    path: Path
    run: Run

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def started(self) -> str:
        return self.run.ts

    @property
    def workspace(self) -> str | None:
        recorded = self.run.workspace
        return recorded.path if recorded is not None else None

    @property
    def model(self) -> str | None:
        model = self.run.model
        return model.provider if model is not None else None

    @property
    def steps(self) -> int:
        return self.run.finished.steps if self.run.finished is not None else self.run.requests

    @property
    def stop_reason(self) -> str:
        if self.run.finished is not None:
            return self.run.finished.stop_reason
        from mini_harness.replay.history import UNFINISHED

        return UNFINISHED if self.run.is_agent else "tool run"

    @property
    def tokens(self) -> int | None:
        """Input and output tokens the provider reported over the run (None: none said)."""
        if self.run.finished is None:
            return None
        usage = self.run.finished.usage
        counts = [n for n in (usage.input_tokens, usage.output_tokens) if n is not None]
        return sum(counts) if counts else None

    def to_json(self) -> JsonObject:
        """A row of `sessions --json`."""
        origin = self.run.origin
        return {
            "runId": self.run_id,
            "started": self.started,
            "workspace": self.workspace,
            "task": self.run.task if self.run.is_agent else None,
            "model": self.model,
            "steps": self.steps,
            "stopReason": self.stop_reason,
            "tokens": self.tokens,
            "continues": None if origin is None else {origin[0]: origin[1].run_id},
            "transcript": str(self.path),
        }


@attrs.frozen
class Unreadable:
    """A file of the store that could not be read as a transcript, and why."""

    path: Path
    reason: str


@attrs.frozen
class Pruned:
    """What `prune` removed (or, in a dry run, would remove): a session's transcript, the
    files kept beside it (torn tails set aside, the `view` page), how many runs it held and
    when it was last written to."""

    path: Path
    last: str
    runs: int
    beside: tuple[Path, ...] = ()


class SessionStore:
    """The transcripts under `root`, and the questions asked of them.

    `unreadable` lists the files the last scan could not read (they are never acted on).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.unreadable: list[Unreadable] = []

    def __repr__(self) -> str:
        return f"<SessionStore(root={str(self.root)!r})>"

    def make(self) -> None:
        """Make the store's directory if it is not there: readable by its owner alone, as
        sessions hold what the tools read and the model said (a directory that exists
        keeps its mode; writing in it says why, if it cannot be made)."""
        with contextlib.suppress(OSError):
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def new_transcript(self, run_id: str, now: dt.datetime | None = None) -> Path:
        """Where a session whose first run is `run_id`, starting `now`, is recorded (a
        run's, a dispatch's, an import's alike), its day folder made: the store and each
        folder it makes readable by their owner alone (one that exists keeps its mode;
        writing there says why, if one cannot be made)."""
        now = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
        day = self.root / f"{now:%Y}" / f"{now:%m}" / f"{now:%d}"
        self.make()
        with contextlib.suppress(OSError):
            for folder in (day.parent.parent, day.parent, day):
                folder.mkdir(mode=0o700, exist_ok=True)
        return day / f"{now:%Y%m%dT%H%M%SZ}-{run_id}{SUFFIX}"

    def transcripts(self) -> list[tuple[Path, float]]:
        """Every transcript of the store (regular files named *.jsonl: never a FIFO, a
        device or a link) with its modification time, the most recently written first."""
        found: list[tuple[Path, float]] = []
        for directory, _dirs, files in os.walk(self.root):
            for name in files:
                if not name.endswith(SUFFIX):
                    continue
                path = Path(directory) / name
                with contextlib.suppress(OSError):
                    info = os.lstat(path)
                    if stat.S_ISREG(info.st_mode):
                        found.append((path, info.st_mtime))
        found.sort(key=lambda item: (-item[1], str(item[0])))
        return found

    def read(self, path: Path) -> list[StoredRun]:
        """The runs of one transcript: of a file whose runs all finished, what their
        RunStarted and RunFinished lines say, found without reading the rest
        (transcripts/skim.py); else of the whole file, read up to any damage. [] and an
        entry in `unreadable` when it cannot be read as a transcript."""
        from mini_harness.replay.history import TranscriptFold

        try:
            skimmed = skim_runs(path)
        except OSError:  # read whole, which says why it cannot be
            skimmed = None
        try:
            history = TranscriptFold(path, damage=True, source=skimmed).read()
        except TranscriptError as exc:
            self.unreadable.append(Unreadable(path, exc.message))
            return []
        return [StoredRun(path, run) for run in history.runs]

    def runs(
        self,
        *,
        workspace: str | None = None,
        since: dt.datetime | None = None,
        keep: Callable[[StoredRun], bool] | None = None,
    ) -> list[StoredRun]:
        """The runs of the store, newest first: only those that recorded `workspace` (an
        absolute path) when given, that started at `since` or later, and that `keep`
        keeps."""
        self.unreadable = []
        after = iso(since) if since is not None else None
        found: list[StoredRun] = []
        for path, mtime in self.transcripts():
            if since is not None and mtime < since.timestamp():
                continue  # written to last before `since`: no run in it started later
            for stored in self.read(path):
                if after is not None and stored.started < after:
                    continue
                if workspace is not None and stored.workspace != workspace:
                    continue
                if keep is None or keep(stored):
                    found.append(stored)
        found.sort(key=lambda stored: stored.started, reverse=True)
        return found

    def last_run(
        self, workspace: str | None, keep: Callable[[StoredRun], bool] | None = None
    ) -> StoredRun | None:
        """The newest run that recorded `workspace` (any, for None) and that `keep` keeps.

        Files are read most recently written first, and reading stops at the first file
        written to before the newest run found so far started: a run starts before its
        file's last write, so no file after that can hold a newer one."""
        self.unreadable = []
        best: StoredRun | None = None
        for path, mtime in self.transcripts():
            if best is not None and mtime < _utc(best.started).timestamp():
                break
            for stored in self.read(path):
                if workspace is not None and stored.workspace != workspace:
                    continue
                if keep is not None and not keep(stored):
                    continue
                if best is None or stored.started > best.started:
                    best = stored
        return best

    def find_run(self, prefix: str) -> StoredRun | None:
        """The run whose id starts with `prefix`, across the whole store, by the one rule of
        `--run` (history/select.py): None when none does, ReplayError naming the candidates
        when several do."""
        from mini_harness.replay.history import RunSelection

        self.unreadable = []
        selection = RunSelection(prefix, by_index=False)
        where: dict[int, StoredRun] = {}
        every: list[Run] = []
        for path, _mtime in self.transcripts():
            for stored in self.read(path):
                where[id(stored.run)] = stored
                every.append(stored.run)
                selection.offer(stored.run)

        def label(run: Run) -> str:
            return f"{run.run_id} ({where[id(run)].path})"

        if not selection.matches:
            return None
        found = selection.check(f"the session store ({self.root})", every, label)
        return where[id(found)]

    def prune(self, before: dt.datetime, *, dry_run: bool = False) -> list[Pruned]:
        """Remove every session last written to before `before` (by what its runs recorded:
        the latest start or finish), with the files kept beside it; then the directories
        left empty. A file that cannot be read, or whose run is still being
        written by a live process, is kept. Returns what was removed (with `dry_run`:
        what would be), oldest first."""
        self.unreadable = []
        cutoff = iso(before)
        removed: list[Pruned] = []
        for path, mtime in self.transcripts():
            if mtime >= before.timestamp():
                continue
            runs = self.read(path)
            if not runs and any(entry.path == path for entry in self.unreadable):
                continue
            last = max((_last_activity(stored.run) for stored in runs), default=None)
            last = last or iso(dt.datetime.fromtimestamp(mtime, dt.UTC))
            if last >= cutoff or _still_written(path, runs):
                continue
            beside = sorted(path.parent.glob(f"{path.name}.torn-*"))
            if path.with_suffix(".html").is_file():
                beside.append(path.with_suffix(".html"))
            removed.append(Pruned(path, last, len(runs), tuple(beside)))
        removed.sort(key=lambda pruned: pruned.last)
        if not dry_run:
            for pruned in removed:
                for each in (pruned.path, *pruned.beside):
                    with contextlib.suppress(FileNotFoundError):
                        each.unlink()
                self._remove_empty_parents(pruned.path)
        return removed

    def _remove_empty_parents(self, path: Path) -> None:
        """The day, month and year directories `path` was in, while they are empty."""
        directory = path.parent
        while directory != self.root and self.root in directory.parents:
            try:
                directory.rmdir()
            except OSError:  # not empty, or gone: left as it is
                return
            directory = directory.parent


def _last_activity(run: Run) -> str:
    return run.finished.ts if run.finished is not None else run.ts


def _still_written(path: Path, runs: list[StoredRun]) -> bool:
    """Whether a live process holds one of the unfinished runs of `path` as being written."""
    unfinished = [stored.run_id for stored in runs if stored.run.finished is None]
    if not unfinished:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return True  # cannot tell: kept
    try:
        return any(is_held(fd, run_id) for run_id in unfinished)
    finally:
        os.close(fd)
