"""`read_file`: a UTF-8 text file of the workspace, whole or a range of lines."""

from __future__ import annotations

from typing import Any

import attrs

from mini_harness.errors import FileRefusedError, WorkspaceError
from mini_harness.events import JsonObject
from mini_harness.tools.definitions import (
    DEFAULT_LINE_LIMIT,
    DEFAULT_MAX_BYTES,
)
from mini_harness.tools.workspace import (
    Workspace,
    quote_path,
)

# What str.splitlines breaks lines at besides "\n", "\r\n" and a lone "\r".
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def split_lines(text: str) -> list[str]:
    """Lines as editors, search_text and apply_patch count them: split on "\\n" only,
    ends kept (the last line may have none)."""
    if _splits_at_newlines_only(text):
        return text.splitlines(keepends=True)  # the same lines, split without a loop
    lines = text.split("\n")
    kept = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        kept.append(lines[-1])
    return kept


def _splits_at_newlines_only(text: str) -> bool:
    """True when str.splitlines would split `text` where split_lines does."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return False
    return not any(map(text.__contains__, _OTHER_BREAKS))


def decode_text(data: bytes) -> str | None:
    """The text of a UTF-8 file (BOM dropped), or None when it looks binary."""
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")  # the plain codec: "utf-8-sig" decodes in Python
    except UnicodeDecodeError:
        return None
    return text[1:] if text.startswith("\ufeff") else text


@attrs.frozen
class ReadFile:
    """The read_file handler, bound to one workspace."""

    workspace: Workspace

    def __call__(self, tool_input: dict[str, Any]) -> JsonObject:
        path: str = tool_input["path"]
        shown = quote_path(path)
        found = self.workspace.locate_file(path)
        try:
            data = self.workspace.read(found.real, DEFAULT_MAX_BYTES)
        except FileRefusedError as exc:
            if exc.size is not None:
                raise WorkspaceError(
                    path,
                    f"File {shown} is {exc.size:,} bytes, over read_file's limit of "
                    f"{DEFAULT_MAX_BYTES:,} bytes",
                ) from None
            if exc.outside:
                raise WorkspaceError(
                    path, f"Path {shown} changed to lead outside the workspace while being read"
                ) from None
            raise WorkspaceError(
                path, f"Path {shown} is a {exc.kind}, not a regular file"
            ) from None
        except OSError as exc:
            raise WorkspaceError(
                path, f"Path {shown} cannot be read: {exc.strerror or exc}"
            ) from None
        text = decode_text(data)
        if text is None:
            raise WorkspaceError(
                path, f"File {shown} looks binary (not UTF-8 text); read_file reads text only"
            )
        lines = split_lines(text)
        total = len(lines)
        offset = tool_input.get("offset", 1)
        limit = tool_input.get("limit", DEFAULT_LINE_LIMIT)
        if offset > max(total, 1):
            raise WorkspaceError(
                path,
                f"offset {offset} is past the end of {shown} "
                f"({total} {'line' if total == 1 else 'lines'})",
            )
        chosen = lines[offset - 1 : offset - 1 + limit]
        end = offset - 1 + len(chosen)
        return {
            "path": found.relative,
            "text": "".join(chosen),
            "startLine": offset,
            "endLine": end,
            "totalLines": total,
            "truncated": end < total,
        }
