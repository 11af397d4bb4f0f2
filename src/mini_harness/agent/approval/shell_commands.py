"""The programs a command line runs, read with a shell grammar (tree-sitter's bash).

The approval policy's `command` rules match these. A shell line is parsed, not split on
separators: every simple command anywhere in it counts (in lists and pipelines, subshells,
groups, `if`/`while`/`for`/`case` bodies, functions, command and process substitutions,
redirections, here-documents), leading assignments are skipped, quotes and backslashes
are removed as the shell removes them, and the usual wrappers are seen through (`env`,
`command`, `exec`, `time`, `nice`, `nohup`, `timeout`, `xargs`, `sudo`, `find -exec`,
`sh -c '...'`, `eval '...'`, ...). What cannot be told from the text (a line the grammar
cannot parse, a command named by an expansion, `eval` of an expansion, a shell reading
commands from its input, an `alias`) is said, so that a rule asks instead of guessing.

A program's own code is out of sight: `python -c`, a script file, a Makefile run what
they like. The sandbox, not the policy, confines them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

import attrs
import regex
import tree_sitter
import tree_sitter_bash

_PARSER: Final = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
MAX_NESTING: Final = 16
"""How deep commands inside commands are followed: wrappers (`nice env ...`) and command
strings (`sh -c "eval '...'"`); deeper than this cannot be told."""

Word = str | None
"""A word as the shell will pass it, or None when an expansion decides it at run time."""

# Unquoted globs (`*`, `?`, `[...]`) and brace expansions (`{a,b}`, `{1..3}`).
_EXPANDS: Final = regex.compile(r"(?<!\\)(?:\\\\)*(?:[*?]|\[[^\]]+\]|\{[^{}]*(?:,|\.\.)[^{}]*\})")
# A backslash-newline between two non-blank characters joins them into one word; the
# grammar reads it as a blank.
_JOINED_LINE: Final = regex.compile(r"\S\\\r?\n\S")
_SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh"})
_FIND_EXEC: Final = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


@attrs.frozen
class _Wrapper:
    """A program that runs the command given after its options and operands."""

    short_values: str = ""  # short options taking a value: -n 5, -n5
    long_values: frozenset[str] = frozenset()  # long options taking a value: --user alice
    operands: int = 0  # words between the options and the command (timeout's duration)
    assignments: bool = False  # NAME=VALUE words before the command (env)
    code: str = ""  # short options whose value is a shell line (su -c)
    joined_code: bool = False  # the rest of the words, joined, is a shell line (watch)
    opaque: str = ""  # short options after which the command cannot be told (env -S)


_WRAPPERS: Final = {
    "builtin": _Wrapper(),
    "busybox": _Wrapper(),
    "chrt": _Wrapper("TPD", operands=1),
    "command": _Wrapper(),
    "coproc": _Wrapper(),
    "doas": _Wrapper("uC"),
    "env": _Wrapper(
        "uC", frozenset({"unset", "chdir", "split-string"}), assignments=True, opaque="S"
    ),
    "exec": _Wrapper("a"),
    "ionice": _Wrapper("cnpPu", frozenset({"class", "classdata", "pid", "pgid", "uid"})),
    "nice": _Wrapper("n", frozenset({"adjustment"})),
    "nohup": _Wrapper(),
    "setsid": _Wrapper(),
    "stdbuf": _Wrapper("ioe", frozenset({"input", "output", "error"})),
    "su": _Wrapper("gGsw", frozenset({"group", "supp-group", "shell", "command"}), code="c"),
    "sudo": _Wrapper(
        "ugCDhprtTU",
        frozenset(
            {"user", "group", "close-from", "chdir", "host", "prompt", "role", "type"}
            | {"command-timeout", "other-user"}
        ),
    ),
    "taskset": _Wrapper(operands=1),
    "time": _Wrapper("fo", frozenset({"format", "output"})),
    "timeout": _Wrapper("sk", frozenset({"signal", "kill-after"}), operands=1),
    "watch": _Wrapper("nd", frozenset({"interval", "differences"}), joined_code=True),
    "xargs": _Wrapper(
        "aEdILnPs",
        frozenset(
            {"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}
        ),
    ),
}


@attrs.frozen
class CommandLine:
    """What a command line runs: each simple command's words (the program first), and
    why some command cannot be told, if it cannot."""

    commands: tuple[tuple[Word, ...], ...] = ()
    unclear: str | None = None


def shell_commands(line: str) -> CommandLine:
    """The commands `sh -c LINE` runs, as far as its text tells."""
    reader = _Reader()
    reader.read_line(line, 0)
    return reader.result()


def argv_commands(argv: Sequence[str]) -> CommandLine:
    """The commands an argv run without a shell runs: itself, and what its wrappers run."""
    reader = _Reader()
    reader.add(tuple(argv), 0)
    return reader.result()


def plain_words(text: str) -> tuple[str, ...]:
    """The words of one simple command written as a shell would read it (`git log`,
    `rm -r`); ValueError says why `text` is not one."""
    tree = _PARSER.parse(text.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    if root.has_error or _JOINED_LINE.search(text):
        raise ValueError("is not a complete shell command (a quote left open?)")
    nodes = root.named_children
    if len(nodes) != 1 or nodes[0].type != "command":
        raise ValueError("must be one command: no operators, redirections or comments")
    words = _command_words(nodes[0])
    if not words or any(word is None for word in words) or _assigns(nodes[0]):
        raise ValueError("must be plain words: no expansions, globs or assignments")
    return tuple(word for word in words if word is not None)


def _assigns(node: tree_sitter.Node) -> bool:
    return any(child.type == "variable_assignment" for child in node.named_children)


class _Reader:
    """Collects the commands of a line, and the first reason one cannot be told."""

    def __init__(self) -> None:
        self.commands: list[tuple[Word, ...]] = []
        self.unclear: str | None = None

    def result(self) -> CommandLine:
        return CommandLine(tuple(self.commands), self.unclear)

    def cannot_tell(self, why: str) -> None:
        if self.unclear is None:
            self.unclear = why

    def read_line(self, line: str, depth: int) -> None:
        if depth > MAX_NESTING:
            self.cannot_tell(f"commands nested more than {MAX_NESTING} deep")
            return
        tree = _PARSER.parse(line.encode("utf-8", "surrogatepass"))
        if tree.root_node.has_error:
            self.cannot_tell("the shell grammar cannot parse it")
        if _JOINED_LINE.search(line):
            self.cannot_tell("a backslash-newline joins two words")
        for node in _nodes(tree.root_node):
            words = _command_words(node)
            if words:
                self.add(words, depth)

    def add(self, words: tuple[Word, ...], depth: int) -> None:
        """Add a command, then what it runs in turn (wrappers, shells, eval, find -exec)."""
        if depth > MAX_NESTING:
            self.cannot_tell(f"commands nested more than {MAX_NESTING} deep")
            return
        self.commands.append(words)
        program = _program(words[0])
        if program is None:
            self.cannot_tell("a command is named by an expansion")
            return
        rest = words[1:]
        if program in _SHELLS:
            self._shell(rest, depth)
        elif program in _WRAPPERS:
            self._wrapped(_WRAPPERS[program], program, rest, depth)
        elif program == "eval" and rest:
            self._code(rest, "eval", depth)
        elif program == "trap":
            self._trap(rest, depth)
        elif program == "find":
            self._find(rest, depth)
        elif program == "alias" and rest:
            self.cannot_tell("an alias can rename any command")

    def _code(self, words: tuple[Word, ...], what: str, depth: int) -> None:
        if any(word is None for word in words):
            self.cannot_tell(f"{what} of an expansion")
            return
        self.read_line(" ".join(word for word in words if word is not None), depth + 1)

    def _shell(self, words: tuple[Word, ...], depth: int) -> None:
        index, from_input, inline = 0, False, False
        while index < len(words):
            word = words[index]
            if word is None:
                self.cannot_tell("a shell's arguments are expansions")
                return
            if word == "--" or not word.startswith(("-", "+")) or word in ("-", "+"):
                index += word == "--"
                break
            if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                index += 1
            elif not word.startswith("--"):
                inline = inline or (word[0] == "-" and "c" in word)
                from_input = from_input or (word[0] == "-" and "s" in word)
            index += 1
        operands = words[index:]
        if inline:
            if operands:
                self._code(operands[:1], "a shell's -c", depth)
        elif from_input or not operands:
            self.cannot_tell("a shell reads its commands from its input")

    def _wrapped(self, spec: _Wrapper, program: str, words: tuple[Word, ...], depth: int) -> None:
        index, operands = 0, spec.operands
        while index < len(words):
            word = words[index]
            if word is None:
                self.cannot_tell(f"{program}'s arguments are expansions")
                return
            if word == "--":
                index += 1
                break
            if word.startswith("--") and len(word) > 2:
                name, has_value, _ = word[2:].partition("=")
                index += 2 if name in spec.long_values and not has_value else 1
                if name == "split-string":
                    self.cannot_tell(f"{program} splits a string into a command")
                    return
                if name == "command" and spec.code:
                    value = word.partition("=")[2] if has_value else _at(words, index - 1)
                    self._code((value,), f"{program} --command", depth)
                    return
                continue
            if word.startswith("-") and len(word) > 1:
                if program == "command" and ("v" in word or "V" in word):
                    return  # only says what the name is
                for position, letter in enumerate(word[1:], 2):
                    if letter in spec.opaque:
                        self.cannot_tell(f"{program} -{letter} splits a string into a command")
                        return
                    if letter in spec.short_values + spec.code:
                        attached = word[position:]
                        value = attached or _at(words, index + 1)
                        index += 0 if attached else 1
                        if letter in spec.code:
                            self._code((value,), f"{program} -{letter}", depth)
                            return
                        break
                index += 1
                continue
            if spec.assignments and "=" in word:
                index += 1
                continue
            if operands:
                operands -= 1
                index += 1
                continue
            break
        command = words[index:]
        if not command:
            return
        if spec.joined_code:
            self._code(command, program, depth)
        else:
            self.add(command, depth + 1)

    def _trap(self, words: tuple[Word, ...], depth: int) -> None:
        if words[:1] == ("--",):
            words = words[1:]
        if len(words) >= 2 and words[0] not in ("-", "-p", "-l", "-P"):
            self._code(words[:1], "trap", depth)

    def _find(self, words: tuple[Word, ...], depth: int) -> None:
        start = None
        for index, word in enumerate(words):
            if start is None and word in _FIND_EXEC:
                start = index + 1
            elif start is not None and word in (";", "+"):
                if index > start:
                    self.add(words[start:index], depth + 1)
                start = None
        if start is not None and start < len(words):
            self.add(words[start:], depth + 1)


def _at(words: tuple[Word, ...], index: int) -> Word:
    return words[index] if index < len(words) else ""


def _program(word: Word) -> str | None:
    """The program a command's first word names: `/bin/rm` and `\\rm` are `rm`."""
    if word is None or not word:
        return None
    return word.rsplit("/", 1)[-1]


def _nodes(root: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Every `command` node of the tree, depth first (without recursion: a tree can be
    deeper than Python's stack)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "command":
            yield node
        stack.extend(reversed(node.children))


def _command_words(node: tree_sitter.Node) -> tuple[Word, ...]:
    """A command node's words: its name, then its arguments (not its assignments or
    redirections)."""
    name = node.child_by_field_name("name")
    if name is None:
        return ()
    arguments = node.children_by_field_name("argument")
    return tuple(_word(part) for part in (*name.named_children[:1], *arguments))


def _word(node: tree_sitter.Node) -> Word:
    """The word the shell makes of `node` after removing quotes, or None if an expansion
    (a variable, a command substitution, a glob, braces) decides it."""
    text = _text(node)
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
        parts = [_word(child) for child in node.named_children]
        if any(part is None for part in parts):
            return None
        return "".join(part for part in parts if part is not None)
    return None  # expansions, $'...', $"...", arithmetic, substitutions


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


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
