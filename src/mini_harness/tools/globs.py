"""Glob patterns and the .gitignore subset the file tools understand.

Globs: `*` and `?` stay within one path segment, `**` as a whole segment crosses
directories (`**/x`, `a/**`, `a/**/b`), `[abc]` / `[!abc]` are character classes, a
backslash escapes the next character, and (for tool globs only, not .gitignore) `{a,b}`
offers alternatives within a segment.

.gitignore subset: blank lines and `#` comments are skipped, trailing spaces are trimmed
unless escaped, `!` negates, a trailing `/` matches directories only, a pattern with a
`/` at the start or in the middle is anchored to the directory of its .gitignore (else it
matches a name at any depth), and the last matching line wins. As in git, a file inside
an ignored directory cannot be re-included, because the directory is never entered.
Not supported: `core.excludesFile`, `.git/info/exclude`, and git's case-folding option.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs


def _class(pattern: str, i: int) -> tuple[str, int] | None:
    """Translate a `[...]` class starting at pattern[i]; None if it never closes."""
    j = i + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    if j >= len(pattern):
        return None
    body = pattern[i + 1 : j]
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    body = body.replace("\\", "\\\\").replace("[", "\\[")
    if body.startswith("^"):
        body = "\\" + body
    # A class never matches "/": paths are matched segment by segment.
    return f"(?!/)[{'^' if negate else ''}{body}]", j + 1


def _braces(pattern: str, i: int) -> tuple[list[str], int] | None:
    """Split `{a,b}` starting at pattern[i] into alternatives; None if not a brace group."""
    end = pattern.find("}", i)
    if end == -1 or "{" in pattern[i + 1 : end]:
        return None
    options = pattern[i + 1 : end].split(",")
    return (options, end + 1) if len(options) > 1 else None


def _segment(segment: str, *, braces: bool) -> str:
    """Regex for one path segment (no "/" inside)."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i < len(segment) and segment[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[" and (found := _class(segment, i)) is not None:
            out.append(found[0])
            i = found[1]
            continue
        elif char == "{" and braces and (group := _braces(segment, i)) is not None:
            options, i = group
            out.append("(?:" + "|".join(_segment(o, braces=braces) for o in options) + ")")
            continue
        elif char == "\\" and i + 1 < len(segment):
            i += 1
            out.append(re.escape(segment[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def glob_regex(pattern: str, *, braces: bool = False) -> str:
    """An anchored regex source matching posix paths (or names) against `pattern`."""
    segments = pattern.split("/")
    out: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "**":
            out.append(".*" if index == last else "(?:.*/)?")
            continue
        out.append(_segment(segment, braces=braces))
        if index != last:
            out.append("/")
    return "^" + "".join(out) + "$"


@attrs.frozen
class PathGlob:
    """A tool's `glob` filter: without "/" it matches file names, with one relative paths."""

    pattern: str
    _regex: re.Pattern[str] = attrs.field(init=False, repr=False)
    _by_name: bool = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        stripped = self.pattern.lstrip("/")
        object.__setattr__(self, "_by_name", "/" not in stripped)
        object.__setattr__(self, "_regex", re.compile(glob_regex(stripped, braces=True)))

    def matches(self, relative: str) -> bool:
        target = relative.rpartition("/")[2] if self._by_name else relative
        return self._regex.match(target) is not None


@attrs.frozen
class IgnoreRule:
    """One .gitignore line."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool


def _trim_trailing_spaces(line: str) -> str:
    trimmed = line.rstrip(" ")
    # An escaped space ("\\ ") stays, with the backslash that escapes it.
    return trimmed + " " if trimmed.endswith("\\") and trimmed != line else trimmed


def parse_rule(line: str) -> IgnoreRule | None:
    """Parse one .gitignore line; None for blank lines and comments."""
    line = _trim_trailing_spaces(line.rstrip("\r\n"))
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    return IgnoreRule(
        regex=re.compile(glob_regex(line.lstrip("/"))),
        negate=negate,
        dir_only=dir_only,
        anchored=anchored,
    )


@attrs.frozen
class IgnoreFile:
    """The rules of one .gitignore; `base` is its directory relative to the root ("" = root)."""

    base: str
    rules: tuple[IgnoreRule, ...]

    @classmethod
    def parse(cls, base: str, text: str) -> IgnoreFile:
        rules = (parse_rule(line) for line in text.splitlines())
        return cls(base, tuple(rule for rule in rules if rule is not None))

    def decide(self, relative: str, *, is_dir: bool) -> bool | None:
        """True ignored, False re-included, None when no line matches `relative`."""
        if self.base:
            relative = relative[len(self.base) + 1 :]
        name = relative.rpartition("/")[2]
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(relative if rule.anchored else name):
                return not rule.negate
        return None


def is_ignored(files: Sequence[IgnoreFile], relative: str, *, is_dir: bool) -> bool:
    """Whether the deepest .gitignore with an opinion ignores `relative` (root-relative)."""
    for ignore in reversed(files):
        decided = ignore.decide(relative, is_dir=is_dir)
        if decided is not None:
            return decided
    return False
