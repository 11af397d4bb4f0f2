"""Shell text read with a shell grammar (tree-sitter's bash): the words of each simple
command a line holds, as the shell will pass them.

Every simple command anywhere in a line counts (in lists and pipelines, subshells, groups,
`if`/`while`/`for`/`case` bodies, functions, command and process substitutions,
redirections, here-documents); leading assignments are skipped, quotes and backslashes
removed as the shell removes them; a word an expansion decides is None. The text of a
`${x#pattern}` that runs a command substitution, which the grammar keeps whole, is given
as it is, to be read again. The parse is bounded: linear in the line's length.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import attrs
import regex
import tree_sitter
import tree_sitter_bash

_PARSER: Final = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
_CHUNK: Final = 512
_WORK_PER_BYTE: Final = 16
_WORK_FLOOR: Final = 1 << 16
"""The grammar's parser reads a line in chunks of _CHUNK bytes, and re-reads some when it
backtracks; it is given _WORK_PER_BYTE bytes per byte of the line (at least _WORK_FLOOR),
then the line ends for it. Real scripts take under 4; the shapes on which its error
recovery goes quadratic (`)` or `${x#` repeated thousands of times) reach the bound, and
the line, cut there, cannot be told."""

Word = str | None
"""A word as the shell will pass it, or None when an expansion decides it at run time."""

# Unquoted globs (`*`, `?`, `[...]`) and brace expansions (`{a,b}`, `{1..3}`).
_EXPANDS: Final = regex.compile(r"(?<!\\)(?:\\\\)*(?:[*?]|\[[^\]]+\]|\{[^{}]*(?:,|\.\.)[^{}]*\})")
# A backslash-newline between two non-blank characters joins them into one word; the
# grammar reads it as a blank.
_JOINED_LINE: Final = regex.compile(r"\S\\\r?\n\S")
# What starts a command inside text the grammar keeps whole (a `${x#pattern}`).
_RUNS_INSIDE: Final = regex.compile(r"\$\(|`|<\(|>\(")
_OPAQUE: Final = frozenset({"regex", "word", "raw_string"})
"""Parts of a `${...}` expansion the grammar does not look into."""


@attrs.frozen
class ParsedLine:
    """A shell line's simple commands (their words, the program first) and the texts of
    the `${...}` patterns in it that run a command, in the order they stand; and why the
    grammar cannot read the line whole (None when it can)."""

    commands: tuple[tuple[Word, ...], ...]
    patterns: tuple[str, ...]
    problem: str | None


def parse_line(line: str) -> ParsedLine:
    """What the grammar reads in `line` (see ParsedLine)."""
    root, source, finished = _parse(line)
    problem = None
    if not finished:
        problem = "the line is too long or too deeply nested to parse"
    elif root.has_error:
        problem = "the shell grammar cannot parse it"
    elif _JOINED_LINE.search(line):
        problem = "a backslash-newline joins two words"
    commands: list[tuple[Word, ...]] = []
    patterns: list[str] = []
    for node in _nodes(root, source):
        if node.type != "command":
            patterns.append(_text(node, source))
        elif words := _command_words(node, source):
            commands.append(words)
    return ParsedLine(tuple(commands), tuple(patterns), problem)


def plain_words(text: str) -> tuple[str, ...]:
    """The words of one simple command written as a shell would read it (`git log`,
    `rm -r`); ValueError says why `text` is not one."""
    root, source, finished = _parse(text)
    if root.has_error or not finished or _JOINED_LINE.search(text):
        raise ValueError("is not a complete shell command (a quote left open?)")
    nodes = root.named_children
    if len(nodes) != 1 or nodes[0].type != "command":
        raise ValueError("must be one command: no operators, redirections or comments")
    words = _command_words(nodes[0], source)
    if not words or any(word is None for word in words) or _assigns(nodes[0]):
        raise ValueError("must be plain words: no expansions, globs or assignments")
    return tuple(word for word in words if word is not None)


def _parse(line: str) -> tuple[tree_sitter.Node, bytes, bool]:
    """The grammar's tree of `line`, the bytes its nodes span, and whether it read the
    line to its end within the work it is given (see _WORK_PER_BYTE): the parse is linear
    in the line's length. (A node's text is taken from the bytes: the tree would read it
    through the budgeted reader again.)"""
    source = line.encode("utf-8", "surrogatepass")
    chunks = (len(source) * _WORK_PER_BYTE + _WORK_FLOOR) // _CHUNK
    finished = True

    def read(offset: int, _point: tuple[int, int]) -> bytes:
        nonlocal chunks, finished
        chunks -= 1
        if chunks < 0:
            finished = False
            return b""
        return source[offset : offset + _CHUNK]

    return _PARSER.parse(read).root_node, source, finished


def _assigns(node: tree_sitter.Node) -> bool:
    return any(child.type == "variable_assignment" for child in node.named_children)


def _nodes(root: tree_sitter.Node, source: bytes) -> Iterator[tree_sitter.Node]:
    """Every `command` node of the tree and every part of a `${...}` kept whole that runs
    a command, depth first (without recursion: a tree can be deeper than Python's stack)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "command":
            yield node
        children = node.children
        if node.type == "expansion":
            for child in children:
                if child.type in _OPAQUE and _RUNS_INSIDE.search(_text(child, source)):
                    yield child
        stack.extend(reversed(children))


def _command_words(node: tree_sitter.Node, source: bytes) -> tuple[Word, ...]:
    """A command node's words: its name, then its arguments (not its assignments or
    redirections)."""
    name = node.child_by_field_name("name")
    if name is None:
        return ()
    arguments = node.children_by_field_name("argument")
    return tuple(_word(part, source) for part in (*name.named_children[:1], *arguments))


def _word(node: tree_sitter.Node, source: bytes) -> Word:
    """The word the shell makes of `node` after removing quotes, or None if an expansion
    (a variable, a command substitution, a glob, braces) decides it."""
    text = _text(node, source)
    kind = node.type
    if kind in ("word", "concatenation") and _EXPANDS.search(text):
        return None
    if kind == "word":
        return _unescape(text, "")
    if kind == "number":
        return text
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        if any(child.type != "string_content" for child in node.named_children):
            return None
        return _unescape(text[1:-1], '$`"\\\n')
    if kind == "concatenation":
        parts = [_word(child, source) for child in node.named_children]
        if any(part is None for part in parts):
            return None
        return "".join(part for part in parts if part is not None)
    return None  # expansions, $'...', $"...", arithmetic, substitutions


def _text(node: tree_sitter.Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")


def _unescape(text: str, special: str) -> str:
    """Remove backslashes as the shell does: before any character outside quotes
    (`special` empty), before one of `special` inside double quotes; a backslash-newline
    goes altogether."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            if following == "\n":
                index += 2
                continue
            if not special or following in special:
                out.append(following)
                index += 2
                continue
        out.append(char)
        index += 1
    return "".join(out)
