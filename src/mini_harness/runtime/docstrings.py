"""Google-style docstrings: the summary a model reads and per-name descriptions."""

from __future__ import annotations

import inspect
import re

import attrs

# Section headers end the summary; only `Args:` and `Attributes:` entries are collected.
_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Attributes|Returns?|Yields?|Raises|"
    r"Examples?|Notes?|See Also|Warnings?|Todo)\s*:\s*$",
    re.IGNORECASE,
)
_ENTRY_SECTIONS = {"args", "arguments", "parameters", "params", "attributes"}
_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@attrs.frozen
class Docstring:
    """`summary`: text before the first section; `entries`: name -> description."""

    summary: str = ""
    entries: dict[str, str] = attrs.field(factory=dict)


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into its summary and its Args/Attributes entries."""
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    entries: dict[str, str] = {}
    section: str | None = None
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        header = _SECTION.match(line) if indent == 0 else None
        if header:
            section = header.group(1).lower()
            entry_indent = None
            current = None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in _ENTRY_SECTIONS or not text:
            continue
        if entry_indent is None:
            entry_indent = indent
        match = _ENTRY.match(text) if indent == entry_indent else None
        if match:
            current = match.group(1)
            entries[current] = match.group(2).strip()
        elif current is not None and indent > (entry_indent or 0):
            entries[current] = f"{entries[current]} {text}".strip()
    return Docstring(summary="\n".join(summary).strip(), entries=entries)


def class_docstring(cls: type) -> str | None:
    """The class's own docstring; None for the one dataclasses invent (`P(x: int)`)."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return None
    if "__dataclass_fields__" in cls.__dict__ and doc.startswith(f"{cls.__name__}("):
        return None
    return doc
