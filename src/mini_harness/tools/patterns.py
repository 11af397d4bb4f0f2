"""A user's regular expression, compiled only when its compiled form stays small.

The `regex` engine writes counted repetitions out when it compiles: `a{1000}` becomes a
thousand copies of `a`, and `(?:(?:(?:a{1000}){1000}){1000})`, 33 characters, a billion
(24 GB before the kernel kills the process). Compiling cannot be interrupted, so the size
is worked out first, on the engine's own parse of the pattern (the very structure it is
about to compile, not a second grammar of ours), and a pattern over the limit is refused
before the engine compiles it.
"""

from __future__ import annotations

from typing import Any, Final

import regex as regex_engine
from regex import _regex_core

from mini_harness.errors import InvalidPatternError
from mini_harness.tools.workspace import quote_path

MAX_PATTERN_LENGTH: Final = 10_000  # characters: parsing alone is linear but slow in Python
MAX_PROGRAM_SIZE: Final = 100_000  # items, counted repetitions written out: ~50 MB, ~0.2 s

# The engine's parser is internal to `regex` (pinned in pyproject.toml) and has no type
# stubs; tests/tools/test_patterns.py fails if an upgrade changes the parts used here.
_parser: Any = _regex_core


def compile_pattern(query: str, *, case_sensitive: bool) -> regex_engine.Pattern[str]:
    """`query` compiled in the engine's `re`-compatible dialect (VERSION0), `^`/`$` at
    line boundaries; InvalidPatternError when it is malformed or too large to compile."""
    shown = quote_path(query)
    if len(query) > MAX_PATTERN_LENGTH:
        raise InvalidPatternError(
            query,
            f"Regular expression is {len(query):,} characters long; at most "
            f"{MAX_PATTERN_LENGTH:,} are accepted",
        )
    flags = regex_engine.MULTILINE | regex_engine.VERSION0
    if not case_sensitive:
        flags |= regex_engine.IGNORECASE
    try:
        # Parsing raises the engine's `error` for a malformed pattern, as compiling would.
        if _unrolled_size(_parse(query, flags)) > MAX_PROGRAM_SIZE:
            raise InvalidPatternError(
                query,
                f"Regular expression {shown} is too large: with its counted repetitions "
                f"written out it has over {MAX_PROGRAM_SIZE:,} items; use smaller counts "
                "in {n} or {m,n}, or fewer nested ones",
            )
        return regex_engine.compile(query, flags, cache_pattern=False)
    except RecursionError:
        raise InvalidPatternError(
            query, f"Regular expression {shown} is nested too deeply"
        ) from None
    except (regex_engine.error, ValueError, OverflowError) as exc:
        # ValueError: flags the dialect cannot take, such as (?V1) or (?L).
        raise InvalidPatternError(query, f"Invalid regular expression {shown}: {exc}") from None


def _parse(query: str, flags: int) -> Any:
    """The engine's parse tree of `query`, made as `regex.compile` makes it."""
    global_flags = flags
    while True:
        source = _parser.Source(query)
        info = _parser.Info(global_flags, source.char_type, {})
        info.guess_encoding = regex_engine.UNICODE
        source.ignore_space = bool(info.flags & regex_engine.VERBOSE)
        try:
            return _parser._parse_pattern(source, info)
        except _parser._UnscopedFlagSet:
            # A flag such as (?i) after the start applies to the whole pattern: the engine
            # parses again with it, and so do we.
            global_flags = info.global_flags


def _unrolled_size(node: Any) -> int:
    """How many items the engine's program for a parse tree holds once each counted
    repetition is written out, counted up to just past MAX_PROGRAM_SIZE: one item per
    node, one per character of a string, each repeated body counted as many times as its
    repetition's minimum (the part the engine writes out)."""
    size = 1
    if isinstance(node, _parser.String):
        size += len(node.characters)
    for value in vars(node).values():
        for child in value if isinstance(value, list | tuple) else (value,):
            if isinstance(child, _parser.RegexBase):
                size += _unrolled_size(child)
    least = getattr(node, "min_count", None)
    if isinstance(least, int) and least > 1:
        size *= least
    return min(size, MAX_PROGRAM_SIZE + 1)
