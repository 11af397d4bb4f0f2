"""`search_text`: lines of workspace text files that contain a string or match a regex."""

from __future__ import annotations

import re
import stat
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs
import regex as regex_engine

from mini_harness.errors import InvalidPatternError, MiniHarnessError
from mini_harness.events import JsonObject
from mini_harness.tools.definitions import DEFAULT_MAX_FILE_BYTES
from mini_harness.tools.definitions import SEARCH_DEFAULT_MAX_RESULTS as DEFAULT_MAX_RESULTS
from mini_harness.tools.definitions import SEARCH_TEXT as SEARCH_TEXT  # noqa: PLC0414 (re-export)
from mini_harness.tools.globs import PathGlob
from mini_harness.tools.list_files import UndecodableCount
from mini_harness.tools.walk import WalkEntry, walk_files
from mini_harness.tools.workspace import (
    FileRefusedError,
    Workspace,
    quote_path,
    read_regular,
)

LINE_TEXT_LIMIT: Final = 300  # longer lines are cut to a window around the match
DEFAULT_REGEX_BUDGET: Final = 5.0  # seconds of regex matching per call
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


class SearchBudgetError(MiniHarnessError):
    """A regex search spent its whole time budget matching; `pattern` and `budget` say which."""

    def __init__(self, pattern: str, budget: float, path: str) -> None:
        super().__init__(
            f"Regex search exceeded its {budget:g} s budget (while searching "
            f"{quote_path(path)}); simplify the pattern, e.g. avoid nested repeats like (a|aa)+"
        )
        self.pattern = pattern
        self.budget = budget
        self.path = path


class _OutOfBudget(Exception):
    """Internal: the regex engine stopped because the search's budget ran out."""


@attrs.define
class RegexClock:
    """The matching time a regex search has left; spent only inside the regex engine."""

    budget: float
    spent: float = 0.0

    def remaining(self) -> float:
        return self.budget - self.spent


def _finder(
    query: str, *, regex: bool, case_sensitive: bool, clock: RegexClock | None = None
) -> Finder:
    """A function giving the (start, end) of the first match at or after a position.

    A user's regex runs in the `regex` engine, whose matching can be interrupted (Python's
    `re` holds the GIL until it finishes, so nothing can stop a pathological pattern).
    Literal queries cannot backtrack and stay with `str.find` or `re`.
    """
    if not regex and case_sensitive:

        def find_literal(text: str, pos: int) -> tuple[int, int] | None:
            start = text.find(query, pos)
            return None if start < 0 else (start, start + len(query))

        return find_literal
    if not regex:
        flags = re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
        literal = re.compile(re.escape(query), flags)

        def find_escaped(text: str, pos: int) -> tuple[int, int] | None:
            found = literal.search(text, pos)
            return None if found is None else found.span()

        return find_escaped
    budget = clock if clock is not None else RegexClock(DEFAULT_REGEX_BUDGET)
    # VERSION0 is the engine's `re`-compatible dialect.
    engine_flags = regex_engine.MULTILINE | regex_engine.VERSION0
    if not case_sensitive:
        engine_flags |= regex_engine.IGNORECASE
    try:
        pattern = regex_engine.compile(query, engine_flags)
    except regex_engine.error as exc:
        raise InvalidPatternError(
            query, f"Invalid regular expression {quote_path(query)}: {exc}"
        ) from None

    def find_pattern(text: str, pos: int) -> tuple[int, int] | None:
        left = budget.remaining()
        if left <= 0:
            raise _OutOfBudget
        start = time.perf_counter()
        try:
            found = pattern.search(text, pos, timeout=left)
        except TimeoutError:
            raise _OutOfBudget from None
        finally:
            budget.spent += time.perf_counter() - start
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
    """The search_text handler, bound to one workspace."""

    workspace: Workspace
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    regex_budget: float = DEFAULT_REGEX_BUDGET  # seconds of regex matching per call

    def __call__(self, tool_input: dict[str, Any]) -> JsonObject:
        query: str = tool_input["query"]
        regex = tool_input.get("regex", False)
        case_sensitive = tool_input.get("caseSensitive", True)
        clock = RegexClock(self.regex_budget)
        find = _finder(query, regex=regex, case_sensitive=case_sensitive, clock=clock)
        may_match = byte_prefilter(query, regex=regex, case_sensitive=case_sensitive)
        glob = tool_input.get("glob")
        matcher = PathGlob(glob) if glob is not None else None
        limit = tool_input.get("maxResults", DEFAULT_MAX_RESULTS)
        matches: list[JsonObject] = []
        searched = skipped = 0
        undecodable = UndecodableCount()
        truncated = False
        for entry in self._files(tool_input.get("path", "."), undecodable):
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
            try:
                for line, shown in line_matches(text, find):
                    if len(matches) == limit:
                        truncated = True
                        break
                    matches.append({"path": entry.path, "line": line, "text": shown})
            except _OutOfBudget:
                raise SearchBudgetError(query, self.regex_budget, entry.path) from None
            if truncated:
                break
        output: JsonObject = {
            "matches": matches,
            "count": len(matches),
            "truncated": truncated,
            "filesSearched": searched,
            "filesSkipped": skipped,
        }
        return undecodable.report(output)

    def _files(self, path: str, undecodable: UndecodableCount) -> Iterator[WalkEntry]:
        top = self.workspace.locate(path)
        if stat.S_ISDIR(top.mode):
            yield from walk_files(self.workspace, top, sizes=False, on_undecodable=undecodable.add)
            return
        found = self.workspace.locate_file(path)
        name = found.relative.rpartition("/")[2]
        yield WalkEntry(found.relative, name, found.real, found.size)

    def _read(self, entry: WalkEntry) -> bytes | None:
        """The bytes of a UTF-8 text file, or None when it is skipped (large, binary, gone)."""
        if entry.size > self.max_file_bytes:
            return None
        try:
            data = read_regular(entry.real, self.max_file_bytes, inside=self.workspace.contains)
        except (OSError, FileRefusedError):
            return None
        if b"\0" in data:
            return None
        if not data.isascii():  # ASCII is UTF-8; anything else must prove it is
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return data
