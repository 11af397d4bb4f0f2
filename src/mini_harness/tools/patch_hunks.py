"""Where a hunk goes in a file, found as `git apply` finds it, and the file with it applied.

Each hunk is looked for in the file as the hunks before it left it: first where its new
start says, then one line below, one above, two below, and so on (so of two equally near
places, the lower wins). A hunk that starts at line 1 (or 0) must match at the start of
the file, and one with no context after its last change must match at the end: this is
what makes a second application of a patch fail. So does a hunk whose new lines are
already where it says, its old lines only further away, or there only as the start of
its new lines (lines added before context they start with). Lines must match exactly,
with their line endings and a missing final newline; only a patch that has no `\\r` at
all may also match a CRLF file's lines, its added lines then taking the file's CRLF. A
hunk at the start of a file written without the file's BOM (the patch has none) matches
after it, and the BOM is kept.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Final

from mini_harness.errors import PatchConflictError
from mini_harness.tools.read_file import split_lines
from mini_harness.tools.unified_diff import FilePatch, Hunk
from mini_harness.tools.workspace import quote_path

BOM: Final = "\ufeff"
_CONTEXT_SHOWN: Final = 3


def _crlf_free(line: str) -> str:
    return line[:-2] + "\n" if line.endswith("\r\n") else line


def _positions(start: int, size: int) -> Iterator[int]:
    """`start`, then one below, one above, two below, ... within 0..size (git's order)."""
    yield start
    below, above = start, start
    while below < size or above > 0:
        if below < size:
            below += 1
            yield below
        if above > 0:
            above -= 1
            yield above


def find_hunk(lines: list[str], old: list[str], hunk: Hunk) -> int | None:
    """Where the hunk's old lines `old` are in `lines`, as git looks for them."""
    size, count = len(lines), len(old)
    if count > size:
        return None
    # An insertion without context numbers the line it follows: "-1,0" is after line 1.
    at_start = hunk.old_start <= (1 if old else 0)
    at_end = not hunk.tags.endswith(" ")  # no context after the last change
    if at_start:
        start = 0
    elif at_end:
        start = size - count
    else:
        start = min(max(hunk.new_start - 1, 0), size)
    if lines[start : start + count] == old and (not at_end or start + count == size):
        return start  # where it says, as most hunks are: no search
    first = old[0] if old else None
    for pos in _positions(start, size):
        if (at_start and pos) or pos + count > size or (at_end and pos + count != size):
            continue
        if first is not None and lines[pos] != first:
            continue
        if lines[pos : pos + count] == old:
            return pos
    return None


def apply_hunks(shown: str, text: str, patch: FilePatch, placed: list[int] | None = None) -> str:
    """`text` with every hunk of `patch` applied; PatchConflictError names the first that
    does not fit. With `placed` (a reversal being worked out, whose result is checked by
    its hash), where each hunk went is appended to it, and a hunk is not refused for
    looking applied already or for lacking context."""

    @functools.cache
    def body() -> str:  # the patch's lines: read only when a hunk is not found as it is
        return "".join("".join(hunk.old_lines) + "".join(hunk.new_lines) for hunk in patch.hunks)

    def crlf_blind() -> bool:
        return "\r" not in body()

    lines = split_lines(text)
    for hunk in patch.hunks:
        if placed is None and not hunk.old_lines and lines and hunk.new_start - 1 != len(lines):
            # No line to find it by: only an append exactly where its numbers say (the
            # end, where git puts such a hunk) can be told from a second application.
            raise _conflict(shown, hunk, lines, hunk.new_start - 1, unplaced=True)
        old = list(hunk.old_lines)
        pos, endings = _search(lines, old, hunk, crlf_blind)
        unmarked = False
        if (
            pos is None
            and text.startswith(BOM)
            and hunk.old_start <= 1
            and lines
            and lines[0].startswith(BOM)
            and BOM not in body()
        ):
            # A hunk at the start written without the file's BOM: matched after it.
            lines[0] = lines[0][1:]
            pos, endings = _search(lines, old, hunk, crlf_blind)
            unmarked = pos is not None
            if not unmarked:
                lines[0] = BOM + lines[0]
        if pos is None:
            raise _conflict(shown, hunk, lines, hunk.new_start - 1)
        expected = max(hunk.new_start - 1, 0)
        if placed is not None:
            placed.append(pos)
        elif (
            hunk.new_lines
            and (pos != expected or len(hunk.new_lines) > len(old))
            and lines[expected : expected + len(hunk.new_lines)] == list(hunk.new_lines)
        ):
            # Its new lines right where it says, its old lines only further away, or there
            # only as the start of its new lines (lines added before a context that they
            # start with): a second application, which a short context (-U1) would
            # otherwise let through.
            raise _conflict(shown, hunk, lines, expected, applied=True, inside=pos == expected)
        # Matched exactly, its context lines are the file's: its new lines replace them
        # as they are.
        replacement = hunk.new_lines if endings is None else _replacement(lines, pos, hunk, endings)
        lines[pos : pos + len(old)] = replacement
        if unmarked and lines:
            lines[0] = BOM + lines[0]
    return "".join(lines)


def _search(
    lines: list[str], old: list[str], hunk: Hunk, crlf_blind: Callable[[], bool]
) -> tuple[int | None, str | None]:
    """Where the hunk goes, and the line ending its added lines take (None: their own):
    exactly, or for a patch without `\r`, in a CRLF file with its `\r` set aside."""
    pos = find_hunk(lines, old, hunk)
    if pos is None and crlf_blind() and any(line.endswith("\r\n") for line in lines):
        return find_hunk([_crlf_free(line) for line in lines], old, hunk), "\r\n"
    return pos, None


def _replacement(lines: list[str], pos: int, hunk: Hunk, endings: str | None) -> list[str]:
    """The hunk's new lines, its context taken from the file as it is (its own line
    endings kept); with `endings`, the added lines get them."""
    out: list[str] = []
    at, new = pos, 0
    for tag in hunk.tags:
        if tag == " ":
            out.append(lines[at])
            at += 1
            new += 1
        elif tag == "-":
            at += 1
        else:
            line = hunk.new_lines[new]
            new += 1
            if endings is not None and line.endswith("\n"):
                line = line[:-1] + endings
            out.append(line)
    return out


def _numbered(lines: list[str], start: int, stop: int) -> str:
    start, stop = max(start, 0), min(stop, len(lines))
    if start >= stop:
        return "    (end of file)" if lines else "    (the file is empty)"
    width = len(str(stop))
    return "\n".join(
        f"    {number:>{width}}| {lines[number - 1].rstrip(chr(10)).removesuffix(chr(13))}"
        for number in range(start + 1, stop + 1)
    )


def _conflict(
    shown: str,
    hunk: Hunk,
    lines: list[str],
    expected: int,
    *,
    unplaced: bool = False,
    applied: bool = False,
    inside: bool = False,
) -> PatchConflictError:
    where = f"Hunk {hunk.number} ({hunk.header}) of {quote_path(shown)}"
    if applied and inside:
        return PatchConflictError(
            shown,
            f"{where} does not apply: it seems applied already (its new lines are at line "
            f"{expected + 1}; its old lines are there only as their start). Nothing was "
            "changed. If it is not applied yet, make the patch with more context lines.",
        )
    if applied:
        return PatchConflictError(
            shown,
            f"{where} does not apply: it seems applied already (its new lines are at line "
            f"{expected + 1}, its old lines only further away). Nothing was changed.",
        )
    if unplaced:
        return PatchConflictError(
            shown,
            f"{where} only adds lines and has no context lines, so apply_patch cannot tell "
            "where it goes or whether it was applied already (only an append at the very "
            "end of the file, where its line numbers say, can be). Nothing was changed. "
            "Make the patch with context lines around each change (git diff's default -U3).",
        )
    expects = "\n".join(f"    {line.rstrip(chr(10))}" for line in hunk.old_lines) or "    (nothing)"
    anchored = ""
    if hunk.old_start <= 1:
        anchored = " It starts at line 1, so it must match at the start of the file."
    elif hunk.trailing == 0:
        anchored = (
            " It has no context lines after its last change, so it must match at the end "
            "of the file."
        )
    final = hunk.old_lines[-1] if hunk.old_lines else ""
    if final and not final.endswith("\n") and lines and lines[-1].endswith("\n"):
        anchored += (
            " Its last line is marked `\\ No newline at end of file`, but the file ends "
            "with a newline."
        )
    elif final.endswith("\n") and lines and not lines[-1].endswith("\n"):
        anchored += (
            " The file does not end with a newline: a hunk that reaches its last line "
            "needs `\\ No newline at end of file` after it."
        )
    around = _numbered(
        lines, expected - _CONTEXT_SHOWN, expected + len(hunk.old_lines) + _CONTEXT_SHOWN
    )
    return PatchConflictError(
        shown,
        f"{where} does not apply: its old lines are not in the file.{anchored} Nothing was "
        f"changed.\nThe hunk expects, at line {expected + 1}:\n{expects}\n"
        f"The file has there:\n{around}",
    )
