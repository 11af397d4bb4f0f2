"""File patches written back as git-style unified diff text, and reversed (for undo)."""

from __future__ import annotations

import attrs

from mini_harness.tools.read_file import split_lines
from mini_harness.tools.unified_diff import DEV_NULL, REGULAR, FilePatch, Hunk

_C_ESCAPES = {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    7: "\\a",
    8: "\\b",
    9: "\\t",
    10: "\\n",
    11: "\\v",
    12: "\\f",
    13: "\\r",
}
_NO_NEWLINE = "\\ No newline at end of file"


def quote_name(name: str) -> str:
    """`name` as git writes it in a patch: C-quoted when it has a space, a quote, a
    backslash, a control character or a byte outside ASCII."""
    data = name.encode("utf-8", "surrogateescape")
    if all(0x20 < byte < 0x7F and byte not in (0x22, 0x5C) for byte in data):
        return name
    out = []
    for byte in data:
        if byte in _C_ESCAPES:
            out.append(_C_ESCAPES[byte])
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _side(prefix: str, name: str | None) -> str:
    return DEV_NULL if name is None else quote_name(prefix + name)


def hunk_text(hunk: Hunk) -> list[str]:
    """A hunk's lines as a unified diff writes them."""
    out = [f"@@ -{hunk.old_start},{len(hunk.old_lines)} +{hunk.new_start},{len(hunk.new_lines)} @@"]
    old = new = 0
    for tag in hunk.tags:
        if tag == "+":
            line = hunk.new_lines[new]
            new += 1
        else:
            line = hunk.old_lines[old]
            old += 1
            new += tag == " "
        out.append(tag + line.removesuffix("\n"))
        if not line.endswith("\n"):
            out.append(_NO_NEWLINE)
    return out


def format_patch(patches: tuple[FilePatch, ...]) -> str:
    """The patches as one `git diff`-style text, which parse_patch reads back."""
    out: list[str] = []
    for patch in patches:
        old = patch.old_path if patch.old_path is not None else patch.new_path
        new = patch.new_path if patch.new_path is not None else patch.old_path
        assert old is not None
        assert new is not None
        out.append(f"diff --git {quote_name('a/' + old)} {quote_name('b/' + new)}")
        if patch.old_path is None:
            out.append(f"new file mode {patch.new_mode or REGULAR:o}")
        elif patch.new_path is None:
            out.append(f"deleted file mode {patch.old_mode or REGULAR:o}")
        elif patch.old_mode is not None and patch.new_mode is not None:
            out += [f"old mode {patch.old_mode:o}", f"new mode {patch.new_mode:o}"]
        if patch.old_path is not None and patch.new_path not in (None, patch.old_path):
            word = "copy" if patch.copy else "rename"
            out += [f"{word} from {quote_name(old)}", f"{word} to {quote_name(new)}"]
        if patch.hunks:
            out.append(f"--- {_side('a/', patch.old_path)}")
            out.append(f"+++ {_side('b/', patch.new_path)}")
            for hunk in patch.hunks:
                out += hunk_text(hunk)
    return "\n".join(out) + "\n"


def reverse_hunk(hunk: Hunk) -> Hunk:
    return attrs.evolve(
        hunk,
        header="",
        old_start=hunk.new_start,
        new_start=hunk.old_start,
        tags=hunk.tags.translate(str.maketrans("+-", "-+")),
        old_lines=hunk.new_lines,
        new_lines=hunk.old_lines,
    )


def reverse(patch: FilePatch, copied: str | None = None) -> FilePatch:
    """The patch that undoes `patch`. A copy is undone by deleting the copy, whose whole
    text `copied` (as it is now) the caller gives."""
    if patch.copy:
        assert copied is not None
        lines = split_lines(copied)
        whole = Hunk(1, "", 1, 0, "-" * len(lines), tuple(lines), ())
        return FilePatch(patch.new_path, None, (whole,) if lines else (), old_mode=patch.new_mode)
    return FilePatch(
        patch.new_path,
        patch.old_path,
        tuple(reverse_hunk(hunk) for hunk in patch.hunks),
        old_mode=patch.new_mode,
        new_mode=patch.old_mode,
    )
