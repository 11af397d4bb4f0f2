"""Parsing unified diffs, as `git diff` and `diff -u` print them, into file patches."""

from __future__ import annotations

import posixpath
import re

import attrs

from mini_harness.errors import PatchSyntaxError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f"}
DEV_NULL = "/dev/null"


@attrs.frozen
class Hunk:
    """One `@@` block: old lines (context and removed) and new lines (context and added)."""

    number: int  # 1-based within its file, as the error messages count
    header: str
    old_start: int
    new_start: int
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    old_ends_without_newline: bool = False
    new_ends_without_newline: bool = False


@attrs.frozen
class FilePatch:
    """The changes to one file. `old_path` is None for a new file, `new_path` for a deletion."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...]

    @property
    def path(self) -> str:
        return self.new_path if self.new_path is not None else self.old_path or ""


def _unquote(name: str) -> str:
    """A path as git prints it: C-quoted ("a/tab\\there") when it has unusual characters."""
    if not (len(name) >= 2 and name.startswith('"') and name.endswith('"')):
        return name
    body = name[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and i + 3 < len(body) + 1:
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _header_path(line: str, prefix: str) -> str | None:
    """The path of a `---` / `+++` line, without a tab-separated timestamp or the a/ b/."""
    name = line[4:]
    if not name.startswith('"') and "\t" in name:
        name = name.split("\t", 1)[0]
    name = _unquote(name.rstrip("\r"))
    if name == DEV_NULL:
        return None
    if name.startswith(prefix):
        name = name[len(prefix) :]
    return name


def parse_patch(text: str) -> tuple[FilePatch, ...]:
    """Every file patch of a unified diff, in order; PatchSyntaxError when it is not one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(("Binary files ", "GIT binary patch")):
            raise PatchSyntaxError(
                f"line {i + 1}: binary patches cannot be applied ({line.strip()})"
            )
        if line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            raise PatchSyntaxError(
                f"line {i + 1}: renames and copies are not supported; write them as a "
                "deletion and an addition"
            )
        if line.startswith(("new file mode 120000", "deleted file mode 120000")):
            raise PatchSyntaxError(f"line {i + 1}: symlinks cannot be patched")
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = _header_path(line, "a/")
            new = _header_path(lines[i + 1], "b/")
            if old is None and new is None:
                raise PatchSyntaxError(f"line {i + 1}: both sides are {DEV_NULL}")
            i, hunks = _parse_hunks(lines, i + 2)
            if not hunks:
                raise PatchSyntaxError(f"line {i + 1}: no @@ hunk for {new or old}")
            patches.append(FilePatch(old, new, tuple(hunks)))
            continue
        if line.startswith("@@"):
            raise PatchSyntaxError(f"line {i + 1}: a hunk without ---/+++ file headers before it")
        i += 1
    if not patches:
        raise PatchSyntaxError("no file changes found (expected ---/+++ headers and @@ hunks)")
    seen: set[str] = set()
    for patch in patches:
        key = posixpath.normpath(patch.path)
        if key in seen:
            raise PatchSyntaxError(f"file {patch.path!r} appears twice in the patch")
        seen.add(key)
    return tuple(patches)


def _parse_hunks(lines: list[str], i: int) -> tuple[int, list[Hunk]]:
    hunks: list[Hunk] = []
    while i < len(lines) and lines[i].startswith("@@"):
        match = _HUNK.match(lines[i])
        if match is None:
            raise PatchSyntaxError(f"line {i + 1}: malformed hunk header {lines[i]!r}")
        header = lines[i]
        old_start = int(match[1])
        old_count = int(match[2]) if match[2] is not None else 1
        new_count = int(match[4]) if match[4] is not None else 1
        old: list[str] = []
        new: list[str] = []
        old_no_nl = new_no_nl = False
        last = ""
        i += 1
        # A "\ No newline at end of file" marker may also follow the hunk's last line.
        while i < len(lines) and (
            len(old) < old_count or len(new) < new_count or lines[i].startswith("\\")
        ):
            body = lines[i]
            tag, content = (body[:1], body[1:]) if body else (" ", "")
            if tag == " ":
                old.append(content)
                new.append(content)
            elif tag == "-":
                old.append(content)
            elif tag == "+":
                new.append(content)
            elif tag == "\\":
                old_no_nl = old_no_nl or last in (" ", "-")
                new_no_nl = new_no_nl or last in (" ", "+")
                i += 1
                continue
            else:
                raise PatchSyntaxError(
                    f"line {i + 1}: hunk {header!r} ends early (expected {old_count} old and "
                    f"{new_count} new lines, got {len(old)} and {len(new)})"
                )
            last = tag
            i += 1
        if len(old) != old_count or len(new) != new_count:
            raise PatchSyntaxError(
                f"hunk {header!r}: expected {old_count} old and {new_count} new lines, "
                f"got {len(old)} and {len(new)}"
            )
        hunks.append(
            Hunk(
                number=len(hunks) + 1,
                header=header,
                old_start=old_start,
                new_start=int(match[3]),
                old_lines=tuple(old),
                new_lines=tuple(new),
                old_ends_without_newline=old_no_nl,
                new_ends_without_newline=new_no_nl,
            )
        )
    return i, hunks


def _hunk_text(hunk: Hunk) -> list[str]:
    """A hunk's lines as a unified diff writes them (context merged, - before +)."""
    old, new = list(hunk.old_lines), list(hunk.new_lines)
    # Leading and trailing lines both sides share are context; the middle is - then +.
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_count, new_count = len(old), len(new)
    out = [f"@@ -{hunk.old_start},{old_count} +{hunk.new_start},{new_count} @@"]
    out += [f" {line}" for line in old[:head]]
    middle_old = old[head : old_count - tail]
    middle_new = new[head : new_count - tail]
    out += [f"-{line}" for line in middle_old]
    if hunk.old_ends_without_newline and not tail:
        out.append("\\ No newline at end of file")
    out += [f"+{line}" for line in middle_new]
    if hunk.new_ends_without_newline and not tail:
        out.append("\\ No newline at end of file")
    out += [f" {line}" for line in old[old_count - tail :]]
    if tail and (hunk.old_ends_without_newline or hunk.new_ends_without_newline):
        out.append("\\ No newline at end of file")
    return out


def reverse_patch(patches: tuple[FilePatch, ...]) -> str:
    """The unified diff that undoes `patches`: each side swapped, as text."""
    out: list[str] = []
    for patch in patches:
        out.append(f"--- {'a/' + patch.new_path if patch.new_path is not None else DEV_NULL}")
        out.append(f"+++ {'b/' + patch.old_path if patch.old_path is not None else DEV_NULL}")
        for hunk in patch.hunks:
            swapped = attrs.evolve(
                hunk,
                old_start=hunk.new_start,
                new_start=hunk.old_start,
                old_lines=hunk.new_lines,
                new_lines=hunk.old_lines,
                old_ends_without_newline=hunk.new_ends_without_newline,
                new_ends_without_newline=hunk.old_ends_without_newline,
            )
            out += _hunk_text(swapped)
    return "\n".join(out) + "\n"
