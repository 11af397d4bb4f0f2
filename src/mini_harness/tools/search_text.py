"""`search_text`: lines of workspace text files that contain a string or match a regex."""

from __future__ import annotations

import contextvars
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs
import regex as regex_engine

from mini_harness.errors import FileRefusedError, SearchBudgetError, SearchDeadlineError
from mini_harness.events import JsonObject
from mini_harness.tools.definitions import DEFAULT_MAX_FILE_BYTES
from mini_harness.tools.definitions import SEARCH_DEFAULT_MAX_RESULTS as DEFAULT_MAX_RESULTS
from mini_harness.tools.definitions import SEARCH_TEXT as SEARCH_TEXT  # noqa: PLC0414 (re-export)
from mini_harness.tools.globs import PathGlob
from mini_harness.tools.patterns import compile_pattern
from mini_harness.tools.read_file import decode_text
from mini_harness.tools.walk import WalkEntry, WalkSkips, walk_files
from mini_harness.tools.workspace import Workspace, quote_path

LINE_TEXT_LIMIT: Final = 300  # longer lines are cut to a window around the match
DEFAULT_REGEX_BUDGET: Final = 5.0  # wall-clock seconds a regex search may take
_CONTEXT_BEFORE = 80


Finder = Callable[[str, int], "tuple[int, int] | None"]

# The non-ASCII characters that re.IGNORECASE matches with an ASCII letter (tested against
# every code point in tests/tools). Files holding one of them cannot be ruled out by an
# ASCII-lowercased byte search.
NON_ASCII_CASE_PARTNERS: Final = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}


def byte_prefilter(query: str, *, regex: bool, case_sensitive: bool) -> Callable[[bytes], bool]:
    """A cheap test on a file's raw bytes that is false only when the file cannot match.

    Most files do not contain the query; with this they are never decoded. Regexes and
    non-ASCII case-insensitive queries are not prefiltered.
    """
    if regex or (not case_sensitive and not query.isascii()):
        return lambda _: True
    if case_sensitive:
        needle = query.encode()
        return lambda data: needle in data
    lowered = query.lower()
    folded = lowered.encode()
    partners = [c.encode() for ch in set(lowered) for c in NON_ASCII_CASE_PARTNERS.get(ch, "")]
    if not partners:
        return lambda data: folded in data.lower()
    return lambda data: (
        folded in data.lower() or (not data.isascii() and any(p in data for p in partners))
    )


@attrs.define
class RegexClock:
    """The wall-clock deadline of one regex search, and the file it is at."""

    deadline: float  # time.monotonic()
    path: str = "."

    def check(self) -> float:
        """The seconds left; SearchDeadlineError when none are."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise SearchDeadlineError
        return left


def literal_finder(query: str, *, case_sensitive: bool) -> Finder:
    """A function giving the (start, end) of the first occurrence at or after a position.

    A literal cannot backtrack: `re` on the escaped query, in the caller's thread.
    """
    literal = re.compile(re.escape(query), 0 if case_sensitive else re.IGNORECASE)

    def find_literal(text: str, pos: int) -> tuple[int, int] | None:
        found = literal.search(text, pos)
        return None if found is None else found.span()

    return find_literal


def pattern_finder(pattern: regex_engine.Pattern[str], clock: RegexClock) -> Finder:
    """Like literal_finder for a compiled user regex, stopped when `clock` runs out.

    The engine's own `timeout` counts CPU time, which a busy machine stretches (5 s of CPU
    took 7.5 s of wall clock): each call gets the wall-clock time left, and the caller stops
    waiting at the deadline anyway (SearchText).
    """

    def find_pattern(text: str, pos: int) -> tuple[int, int] | None:
        try:
            found = pattern.search(text, pos, timeout=clock.check())
        except TimeoutError:
            raise SearchDeadlineError from None
        return None if found is None else found.span()

    return find_pattern


def _shown_line(line: str, column: int) -> str:
    if len(line) <= LINE_TEXT_LIMIT:
        return line
    start = max(0, column - _CONTEXT_BEFORE)
    end = start + LINE_TEXT_LIMIT
    return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")


def line_matches(text: str, find: Finder) -> Iterator[tuple[int, str]]:
    """(line number, line text) for each line with a match, each line at most once."""
    pos = 0
    line_no = 1
    counted_to = 0
    size = len(text)
    while pos <= size:
        found = find(text, pos)
        if found is None:
            return
        start = found[0]
        line_no += text.count("\n", counted_to, start)
        counted_to = start
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", start)
        if line_end < 0:
            line_end = size
        yield line_no, _shown_line(text[line_start:line_end].rstrip("\r"), start - line_start)
        pos = line_end + 1


@attrs.frozen
class SearchText:
    """The search_text handler, bound to one workspace.

    A regex search runs in a worker thread while the caller waits at most `regex_budget`
    seconds of wall clock; past the deadline the worker stops at its next check (the
    engine's timeout bounds the match in progress), whether or not anyone still waits.
    """

    workspace: Workspace
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    regex_budget: float = DEFAULT_REGEX_BUDGET  # wall-clock seconds per regex search

    def __call__(self, tool_input: dict[str, Any]) -> JsonObject:
        if not tool_input.get("regex", False):
            case_sensitive = tool_input.get("caseSensitive", True)
            find = literal_finder(tool_input["query"], case_sensitive=case_sensitive)
            return self._search(tool_input, find, None)
        return self._search_within_budget(tool_input)

    def _search_within_budget(self, tool_input: dict[str, Any]) -> JsonObject:
        query: str = tool_input["query"]
        clock = RegexClock(time.monotonic() + self.regex_budget, tool_input.get("path", "."))
        outcome: list[JsonObject | BaseException] = []

        def search() -> None:
            try:
                pattern = compile_pattern(
                    query, case_sensitive=tool_input.get("caseSensitive", True)
                )
                outcome.append(self._search(tool_input, pattern_finder(pattern, clock), clock))
            except BaseException as exc:  # handed to the caller's thread, raised there
                outcome.append(exc)

        context = contextvars.copy_context()
        worker = threading.Thread(
            target=context.run, args=(search,), name="search_text regex", daemon=True
        )
        worker.start()
        worker.join(max(clock.deadline - time.monotonic(), 0.0))
        if not outcome or isinstance(outcome[0], SearchDeadlineError):
            budget, where = self.regex_budget, clock.path
            raise SearchBudgetError(
                f"Regex search exceeded its {budget:g} s budget (while searching "
                f"{quote_path(where)}); simplify the pattern, e.g. avoid nested repeats like "
                "(a|aa)+",
                pattern=query,
                budget=budget,
                path=where,
            ) from None
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def _search(
        self, tool_input: dict[str, Any], find: Finder, clock: RegexClock | None
    ) -> JsonObject:
        query: str = tool_input["query"]
        may_match = byte_prefilter(
            query,
            regex=tool_input.get("regex", False),
            case_sensitive=tool_input.get("caseSensitive", True),
        )
        glob = tool_input.get("glob")
        matcher = PathGlob(glob) if glob is not None else None
        limit = tool_input.get("maxResults", DEFAULT_MAX_RESULTS)
        matches: list[JsonObject] = []
        searched = skipped = 0
        skips = WalkSkips()
        truncated = False
        for entry in self._files(tool_input.get("path", "."), skips):
            if clock is not None:
                clock.check()
                clock.path = entry.path
            if matcher is not None and not matcher.matches(entry.below):
                continue
            data = self._read(entry)
            if data is None:
                skipped += 1
                continue
            searched += 1
            if not may_match(data):
                continue
            text = data.decode("utf-8-sig")  # checked by _read
            for line, shown in line_matches(text, find):
                if len(matches) == limit:
                    truncated = True
                    break
                matches.append({"path": entry.path, "line": line, "text": shown})
            if truncated:
                break
        output: JsonObject = {
            "matches": matches,
            "count": len(matches),
            "truncated": truncated,
            "filesSearched": searched,
            "filesSkipped": skipped,
        }
        return skips.report(output)

    def _files(self, path: str, skips: WalkSkips) -> Iterator[WalkEntry]:
        top = self.workspace.locate(path)
        if stat.S_ISDIR(top.mode):
            yield from walk_files(self.workspace, top, skips, sizes=False)
            return
        found = self.workspace.locate_file(path)
        name = found.relative.rpartition("/")[2]
        yield WalkEntry(found.relative, name, found.real, found.size)

    def _read(self, entry: WalkEntry) -> bytes | None:
        """The bytes of a UTF-8 text file, or None when it is skipped (large, binary, gone)."""
        try:
            data = self.workspace.read(entry.real, self.max_file_bytes)
        except (OSError, FileRefusedError):
            return None
        if data.isascii() and b"\0" not in data:
            return data  # ASCII is UTF-8 text; anything else must prove it is, as read_file's
        return data if decode_text(data) is not None else None
