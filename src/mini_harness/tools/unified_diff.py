"""Parsing unified diffs, as `git diff`, `git format-patch` and `diff -u` print them.

A line of a hunk keeps its exact text: a `\\r` before the newline stays, and a line
marked `\\ No newline at end of file` has no newline. git's extended headers are read:
new and deleted files (also empty ones, which have no hunk), modes, renames and copies.
Paths lose their `a/` / `b/` (or any one-letter) prefix and git's C quoting.
"""

from __future__ import annotations

import posixpath
import re

import attrs

from mini_harness.errors import PatchSyntaxError

_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f"}
_ESCAPES.update({"v": "\v", "r": "\r"})
DEV_NULL = "/dev/null"
REGULAR, EXECUTABLE = 0o100644, 0o100755
_MODE_HEADERS = ("old mode ", "new mode ", "deleted file mode ", "new file mode ")


@attrs.frozen
class Hunk:
    """One `@@` block. `tags` has one of ` `, `-`, `+` per line of the hunk in order;
    `old_lines` are its context and removed lines, `new_lines` its context and added lines,
    each with its newline (none when marked `\\ No newline at end of file`)."""

    number: int  # 1-based within its file, as the error messages count
    header: str
    old_start: int
    new_start: int
    tags: str
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]

    @property
    def leading(self) -> int:
        """Context lines before the first change."""
        return len(self.tags) - len(self.tags.lstrip(" "))

    @property
    def trailing(self) -> int:
        """Context lines after the last change."""
        return len(self.tags) - len(self.tags.rstrip(" "))


@attrs.frozen
class FilePatch:
    """The change to one file. `old_path` is None for a new file, `new_path` for a deleted
    one; different paths are a rename, or with `copy` a copy. Modes are git's (0o100644,
    0o100755) when the patch gives them."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...]
    old_mode: int | None = None
    new_mode: int | None = None
    copy: bool = False

    @property
    def path(self) -> str:
        return self.new_path if self.new_path is not None else self.old_path or ""


def unquote(name: str) -> str:
    """A name as git prints it: C-quoted ("d d/\\303\\251.txt") when it has unusual bytes."""
    if not (len(name) >= 2 and name.startswith('"') and name.endswith('"')):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "0123" and re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += char.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _quoted_token(text: str) -> tuple[str, str] | None:
    """(the quoted name at the start of `text`, the rest), or None when it has none."""
    if not text.startswith('"'):
        return None
    match = _QUOTED.match(text)
    return None if match is None else (match[0], text[match.end() :])


def _strip_prefix(name: str) -> str:
    # git's -p1: drop the `a/`, `b/` (or mnemonic `c/`, `i/`, `w/`, `o/`) directory.
    return name[2:] if len(name) > 2 and name[1] == "/" else name


def _header_name(line: str) -> str | None:
    """The path of a `---` / `+++` line: quoted, or up to a tab (a timestamp follows)."""
    rest = line[4:].rstrip("\r")
    token = _quoted_token(rest)
    name = unquote(token[0]) if token else rest.split("\t", 1)[0]
    return None if name == DEV_NULL else _strip_prefix(name)


def _plain_names(old_line: str, new_line: str, number: int) -> tuple[str | None, str | None]:
    """The names of a patch without git's headers (`diff -u`): both sides name one file,
    after the `a/` `b/` prefixes, or the first directory of each (`diff -ru old new`)."""
    old, new = _header_name(old_line), _header_name(new_line)
    if old is None and new is None:
        raise PatchSyntaxError(f"line {number}: both sides are {DEV_NULL}")
    if old is None or new is None or posixpath.normpath(old) == posixpath.normpath(new):
        return old, new
    if "/" in old and "/" in new and old.split("/", 1)[1] == new.split("/", 1)[1]:
        same = old.split("/", 1)[1]
        return same, same
    raise PatchSyntaxError(
        f"line {number}: the ---/+++ lines name two files ({old!r} and {new!r}); a rename "
        "needs git's `rename from` / `rename to` lines"
    )


def _git_names(line: str) -> tuple[str, str] | None:
    """Both names of a `diff --git` line; unquoted names with spaces are split where the
    two halves name the same path (git's own rule)."""
    rest = line[len("diff --git ") :].rstrip("\r")
    first = _quoted_token(rest)
    if first is not None:
        second = rest[len(first[0]) :].lstrip(" ")
        token = _quoted_token(second)
        return _strip_prefix(unquote(first[0])), _strip_prefix(
            unquote(token[0]) if token else second
        )
    if rest.endswith('"') and (start := rest.rfind(' "')) > 0:
        return _strip_prefix(rest[:start]), _strip_prefix(unquote(rest[start + 1 :]))
    index = rest.find(" ")
    while index >= 0:
        if _strip_prefix(rest[:index]) == _strip_prefix(rest[index + 1 :]):
            return _strip_prefix(rest[:index]), _strip_prefix(rest[index + 1 :])
        index = rest.find(" ", index + 1)
    return None


def _mode(line: str, number: int) -> int:
    value = line.rsplit(" ", 1)[-1].rstrip("\r")
    if value in ("120000", "160000"):
        kind = "symlinks" if value == "120000" else "submodules"
        raise PatchSyntaxError(f"line {number}: {kind} cannot be patched")
    if value not in ("100644", "100755", "100664"):
        raise PatchSyntaxError(f"line {number}: unknown file mode {value!r}")
    return EXECUTABLE if value == "100755" else REGULAR


@attrs.define
class _Section:
    """What the headers of one file's git section said so far."""

    old: str | None = None
    new: str | None = None
    old_mode: int | None = None
    new_mode: int | None = None
    created: bool = False
    deleted: bool = False
    copy: bool = False
    moved: bool = False  # rename or copy lines were given
    names_given: bool = False  # by ---/+++ or rename/copy lines


def parse_patch(text: str) -> tuple[FilePatch, ...]:
    """Every file patch of a unified diff, in order; PatchSyntaxError when it is not one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if all(line.endswith("\r") for line in lines):
        # The whole patch travelled with CRLF line breaks, headers too: not its content.
        lines = [line[:-1] for line in lines]
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            i = _git_section(lines, i, patches)
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _plain_names(line, lines[i + 1], i + 1)
            i, hunks = _parse_hunks(lines, i + 2)
            if not hunks:
                raise PatchSyntaxError(f"line {i + 1}: no @@ hunk for {new or old}")
            patches.append(FilePatch(old, new, tuple(hunks)))
        elif line.startswith(("Binary files ", "GIT binary patch")):
            raise PatchSyntaxError(f"line {i + 1}: binary patches cannot be applied")
        elif line.startswith("@@"):
            raise PatchSyntaxError(f"line {i + 1}: a hunk without ---/+++ file headers before it")
        else:
            i += 1
    if not patches:
        raise PatchSyntaxError("no file changes found (expected ---/+++ headers and @@ hunks)")
    return tuple(patches)


def _git_section(lines: list[str], start: int, patches: list[FilePatch]) -> int:
    names = _git_names(lines[start])
    section = _Section()
    i = start + 1
    while i < len(lines) and not lines[i].startswith(("diff --git ", "@@")):
        line = lines[i].rstrip("\r")
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            section.old, section.new = _header_name(line), _header_name(lines[i + 1])
            section.names_given = True
            i += 2
            break
        if line.startswith(("Binary files ", "GIT binary patch")):
            raise PatchSyntaxError(f"line {i + 1}: binary patches cannot be applied")
        if line.startswith(_MODE_HEADERS):
            mode = _mode(line, i + 1)
            if line.startswith(("old mode ", "deleted file mode ")):
                section.old_mode = mode
            else:
                section.new_mode = mode
            section.deleted = section.deleted or line.startswith("deleted file mode ")
            section.created = section.created or line.startswith("new file mode ")
        for word, side in (("rename", None), ("copy", "copy")):
            if line.startswith((f"{word} from ", f"{word} to ")):
                name = unquote(line.split(" ", 2)[2])
                if line.startswith(f"{word} from "):
                    section.old = name
                else:
                    section.new = name
                section.names_given = section.moved = True
                section.copy = section.copy or side == "copy"
        i += 1
    i, hunks = _parse_hunks(lines, i)
    if not section.names_given:
        if names is None:
            raise PatchSyntaxError(f"line {start + 1}: cannot tell the file names apart")
        section.old, section.new = names
    if section.created:
        section.old = None
    if section.deleted:
        section.new = None
    if section.old is None and section.new is None:
        raise PatchSyntaxError(f"line {start + 1}: both sides are {DEV_NULL}")
    if (
        section.old is not None
        and section.new is not None
        and posixpath.normpath(section.old) != posixpath.normpath(section.new)
        and not section.moved
    ):
        raise PatchSyntaxError(
            f"line {start + 1}: the section names two files ({section.old!r} and "
            f"{section.new!r}) without git's `rename from` / `rename to` lines"
        )
    patches.append(
        FilePatch(
            section.old,
            section.new,
            tuple(hunks),
            old_mode=section.old_mode,
            new_mode=section.new_mode,
            copy=section.copy,
        )
    )
    return i


def _parse_hunks(lines: list[str], i: int) -> tuple[int, list[Hunk]]:
    """The `@@` hunks from line `i` on, and the index after the last. One pass over each
    body sorts its lines onto the old and new sides (a context line's text is shared); a
    `\\ No newline at end of file` marker takes the newline off the line before it."""
    hunks: list[Hunk] = []
    size = len(lines)
    while i < size and lines[i].startswith("@@"):
        match = _HUNK.match(lines[i])
        if match is None:
            raise PatchSyntaxError(f"line {i + 1}: malformed hunk header {lines[i]!r}")
        header = lines[i].rstrip("\r")
        old_count = int(match[2]) if match[2] is not None else 1
        new_count = int(match[4]) if match[4] is not None else 1
        old: list[str] = []
        new: list[str] = []
        tags: list[str] = []
        i += 1
        while i < size:
            line = lines[i]
            tag = line[:1]
            if tag == "\\":
                if not tags:
                    raise PatchSyntaxError(f"line {i + 1}: a marker with no line before it")
                if tags[-1] != "+":
                    old[-1] = old[-1].removesuffix("\n")
                if tags[-1] != "-":
                    new[-1] = new[-1].removesuffix("\n")
                i += 1
                continue
            if len(old) >= old_count and len(new) >= new_count:
                break
            if tag == " " or not line:  # an empty line: context whose space was trimmed
                text = line[1:] + "\n"
                old.append(text)
                new.append(text)
                tags.append(" ")
            elif tag == "-":
                old.append(line[1:] + "\n")
                tags.append(tag)
            elif tag == "+":
                new.append(line[1:] + "\n")
                tags.append(tag)
            else:
                break
            i += 1
        if len(old) != old_count or len(new) != new_count:
            raise PatchSyntaxError(
                f"hunk {header!r}: expected {old_count} old and {new_count} new lines, "
                f"got {len(old)} and {len(new)}"
            )
        hunks.append(
            Hunk(
                len(hunks) + 1,
                header,
                int(match[1]),
                int(match[3]),
                "".join(tags),
                tuple(old),
                tuple(new),
            )
        )
    return i, hunks
