"""Text made safe to show on a terminal: what a model, a tool or a task wrote is shown,
never obeyed.

A terminal acts on control characters: ESC starts sequences that move the cursor, erase
lines, set the window title or write the clipboard (OSC 52); C1 controls do the same in
one byte; carriage returns and backspaces overwrite what was printed; bidirectional
overrides (U+202E) reorder what is read. `printable` replaces each such character by a
visible escape (`\\x1b`, `\\u202e`), so a person sees every character that is there and
nothing that was hidden. JSON output and transcripts keep the exact text (JSON escapes
control characters itself); this is for text printed for a person.
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


def printable(text: str, *, multiline: bool = True) -> str:
    """`text` with every character a terminal would act on shown as a visible escape.

    Multi-line text keeps its newlines and tabs (and CRLF line ends); with
    `multiline=False` those are escaped too, so the text stays on one line.
    """
    # str.isprintable is false for every character escaped here (and for tab and
    # newline): text it passes has nothing to escape.
    if text.isprintable():
        return text
    return _hidden(multiline).sub(_escaped, text)
