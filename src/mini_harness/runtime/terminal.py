"""Text made safe to show on a terminal: what a model, a tool or a task wrote is shown,
never obeyed.

A terminal acts on control characters: ESC starts sequences that move the cursor, erase
lines, set the window title or write the clipboard (OSC 52); C1 controls do the same in
one byte; carriage returns and backspaces overwrite what was printed; bidirectional
overrides (U+202E) reorder what is read. `printable` replaces each such character by a
visible escape (`\\x1b`, `\\u202e`), so a person sees every character that is there and
nothing that was hidden. Transcripts keep the exact text; JSON printed on a terminal is
passed through `printable_json`, which writes the same characters as JSON escapes
(`\u202e`): the same JSON value, nothing for the terminal to act on.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex


@functools.cache
def _hidden(multiline: bool) -> regex.Pattern[str]:
    """The characters to escape: control characters (C0, DEL, C1), format characters
    (bidi embeddings, overrides and isolates, zero-width joiners, the byte order mark, tag
    characters), the line and paragraph separators and lone surrogates. Multi-line text
    keeps tab and newline, and a carriage return where it ends a line (CRLF), where it
    moves nothing. Compiled on first use: most text printed has none of them."""
    import regex

    if multiline:
        return regex.compile(r"\r(?!\n)|[[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]--[\t\n\r]]", regex.V1)
    return regex.compile(r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]", regex.V1)


def _escaped(match: regex.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _json_escaped(match: regex.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # as JSON writes it: a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


_COLOURS = frozenset(
    {"\x1b[0m", "\x1b[1m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[35m", "\x1b[36m"}
)
"""The colour codes our own text views write (reset, bold, red, green, yellow, magenta,
cyan): the only escape sequences `printable(..., colours=True)` lets through."""


@functools.cache
def _coloured() -> regex.Pattern[str]:
    import regex

    codes = "|".join(regex.escape(code) for code in sorted(_COLOURS))
    hidden = _hidden(True).pattern
    return regex.compile(f"({codes})|{hidden}", regex.V1)


def _plain(text: str, *, multiline: bool) -> bool:
    """Whether `text` has nothing to escape. str.isprintable is false for every character
    escaped here, and for tab and newline, which multi-line text keeps: text of many lines
    (a model's answer, a batch of report or JSON lines) is checked without them, which
    costs a copy, not the regex's walk (about 20 times as long), and most such text passes
    without the regex engine ever loading."""
    if text.isprintable():
        return True
    return multiline and text.replace("\n", "").replace("\t", "").isprintable()


def printable(text: str, *, multiline: bool = True, colours: bool = False) -> str:
    """`text` with every character a terminal would act on shown as a visible escape.

    Multi-line text keeps its newlines and tabs (and CRLF line ends); with
    `multiline=False` those are escaped too, so the text stays on one line. With `colours`,
    the colour codes our own views write are kept (see _COLOURS), and only those.
    """
    if _plain(text, multiline=multiline):
        return text
    if colours:
        return _coloured().sub(lambda m: m.group(1) or _escaped(m), text)
    return _hidden(multiline).sub(_escaped, text)


def printable_json(text: str) -> str:
    """JSON text (as orjson writes it) with every character a terminal would act on that
    JSON leaves as it is (DEL, C1 controls, U+202E and the other format characters, line
    separators) written as a `\\uXXXX` escape: the same JSON value, safe to print."""
    if _plain(text, multiline=True):
        return text
    return _hidden(True).sub(_json_escaped, text)
