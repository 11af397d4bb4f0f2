"""The programs a command line runs, as far as its text tells.

The approval policy's `command` rules match these. A shell line is read with a shell
grammar (shell_grammar.py): every simple command anywhere in it counts, also inside
`${x#...}` patterns; the wrappers of shell_programs.py are seen through (`env`, `nice`,
`sudo`, `xargs`, `find -exec`, `sh -c '...'`, `eval '...'`, ...), and `git -C . push` is
also read as `git push`.

What cannot be told from the text is said, so that a rule asks instead of guessing: a line
the grammar cannot parse (or that takes it more than a bounded amount of work), a command
named by an expansion, `eval` of an expansion, a shell or an interpreter reading its
commands from its input or a script file (`... | sh`, `sh file`, `. file`), code given to
an interpreter (`python -c`, `perl -e`, `node -e`), `git -c` with a key that can name a
command, an `alias`.

A program's own code is out of sight otherwise: a Python script or a Makefile runs what it
likes. The sandbox, not the policy, confines it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from mini_harness.agent.approval.shell_grammar import Word, parse_line
from mini_harness.agent.approval.shell_programs import (
    FIND_EXEC,
    GIT_VALUES,
    HELP_FLAGS,
    RUNUSER,
    SHELLS,
    SOURCING,
    WRAPPERS,
    Wrapper,
    filled,
    git_config_runs,
    interpreter,
    says_what,
    scan_options,
    word_at,
)

MAX_NESTING: Final = 16
"""How deep commands inside commands are followed: wrappers (`nice env ...`) and command
strings (`sh -c "eval '...'"`); deeper than this cannot be told."""


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

    def _too_deep(self, depth: int) -> bool:
        if depth > MAX_NESTING:
            self.cannot_tell(f"commands nested more than {MAX_NESTING} deep")
        return depth > MAX_NESTING

    def read_line(self, line: str, depth: int) -> None:
        if self._too_deep(depth):
            return
        parsed = parse_line(line)
        if parsed.problem is not None:
            self.cannot_tell(parsed.problem)
        for words in parsed.commands:
            self.add(words, depth)
        for pattern in parsed.patterns:
            self._pattern(pattern, depth)

    def _pattern(self, text: str, depth: int) -> None:
        """Text of a `${...}` the grammar kept whole, which runs a command substitution:
        read again as words (a single quote in it quotes or not, depending on the `${...}`
        operator and on double quotes around it: then it cannot be told)."""
        if "'" in text:
            self.cannot_tell("a ${...} pattern holds a quoted command substitution")
        else:
            self.read_line(f": {text}", depth + 1)

    def add(self, words: tuple[Word, ...], depth: int) -> None:
        """Add a command, then what it runs in turn (wrappers, shells, eval, find -exec)."""
        if self._too_deep(depth):
            return
        self.commands.append(words)
        program = _program(words[0])
        if program is None:
            self.cannot_tell("a command is named by an expansion")
            return
        rest = words[1:]
        if program in SHELLS:
            self._shell(rest, depth)
        elif program in WRAPPERS:
            self._wrapped(WRAPPERS[program], program, rest, depth)
        elif program in ("su", "runuser"):
            self._su(program, rest, depth)
        elif program == "git":
            self._git(rest)
        elif program == "eval" and rest:
            self._code(rest, "eval", depth)
        elif program in SOURCING and rest:
            self.cannot_tell(f"`{program}` runs the commands of a file")
        elif program == "trap":
            self._trap(rest, depth)
        elif program == "find":
            self._find(rest, depth)
        elif program == "alias" and rest:
            self.cannot_tell("an alias can rename any command")
        else:
            self._interpreted(program, rest)

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
            if word in HELP_FLAGS:
                return
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
        else:
            self.cannot_tell("a shell runs the commands of a script file")

    def _interpreted(self, program: str, words: tuple[Word, ...]) -> None:
        """An interpreter given code (`python -c`, `perl -e`), or reading it from its
        input, cannot be told; one running a named script or module is the program it
        names (out of sight, as any program's code)."""
        spec = interpreter(program)
        if spec is None:
            return
        index = 0
        while index < len(words):
            word = words[index]
            index += 1
            if word is None:
                self.cannot_tell(f"{program}'s arguments are expansions")
                return
            if word in HELP_FLAGS or (word == "-v" and len(words) == 1):
                return
            if word == "-":
                break
            if word.startswith("--") and len(word) > 2:
                name, has_value, _ = word[2:].partition("=")
                if name in spec.long_code:
                    self.cannot_tell(f"{program} runs code it is given (--{name})")
                    return
                index += name in spec.long_values and not has_value
                continue
            if not word.startswith("-") or len(word) < 2:
                return  # a script file
            for position, letter in enumerate(word[1:], 2):
                if letter in spec.code:
                    self.cannot_tell(f"{program} runs code it is given (-{letter})")
                    return
                if letter in spec.module:
                    return
                if letter in spec.values:
                    index += position == len(word)  # the value is the next word
                    break
        self.cannot_tell(f"{program} reads its code from its input")

    def _wrapped(self, spec: Wrapper, program: str, words: tuple[Word, ...], depth: int) -> None:
        if program == "command" and says_what(words):
            return  # `command -v NAME` only says what the name is
        scan = scan_options(spec, words)
        for why in scan.unclear:
            self.cannot_tell(f"{program}{why}")
        for option, line in scan.code:
            self._code((line,), f"{program} {option}", depth)
        for start, guessed in sorted(scan.starts):
            command = words[start:]
            if not command:
                shell = spec.empty_shell
                if shell is True or (shell and any(letter in scan.flags for letter in shell)):
                    self.cannot_tell(
                        f"{program} runs a shell that reads its commands from its input"
                    )
                continue
            if guessed and command[0] is None:
                continue  # a reading of an unknown option: an expansion is more likely its value
            if spec.input_words:
                command = filled(spec, command, scan.replace)
            if spec.joined_code:
                self._code(command, program, depth)
            else:
                self.add(command, depth + 1)

    def _su(self, program: str, words: tuple[Word, ...], depth: int) -> None:
        """su and runuser run a shell line (`-c LINE`, anywhere), the command after
        `runuser -u USER`, or else a shell."""
        for index, word in enumerate(words):
            if word is None or not word.startswith("-"):
                continue
            name, has_value, value = word.partition("=")
            if name in ("-c", "--command", "--session-command"):
                line = value if has_value else word_at(words, index + 1)
                self._code((line,), f"{program} {name}", depth)
                return
            if word.startswith("-c") and not word.startswith("--"):
                self._code((word[2:],), f"{program} -c", depth)
                return
        if program == "runuser" and any(word in ("-u", "--user") for word in words):
            self._wrapped(RUNUSER, program, words, depth)
            return
        self.cannot_tell(f"{program} runs a shell that reads its commands from its input")

    def _git(self, words: tuple[Word, ...]) -> None:
        """`git -C . push` runs `git push`: the command is added again without git's global
        options. A `-c` setting that can name a command cannot be told."""
        index = 0
        while index < len(words):
            word = words[index]
            if word is None or not word.startswith("-") or word == "-":
                break
            name, has_value, value = word.partition("=")
            step = 1
            if word.startswith("-c") and not word.startswith("--"):
                setting, step = (word[2:], 1) if len(word) > 2 else (word_at(words, index + 1), 2)
            elif name == "--config-env":
                setting, step = (value, 1) if has_value else (word_at(words, index + 1), 2)
            else:
                setting = ""
                if name == "--exec-path" and has_value:
                    self.cannot_tell("git --exec-path runs its commands from another directory")
                    return
                if name in GIT_VALUES and not has_value and name != "--exec-path":
                    step = 2
            if setting is None or (setting and git_config_runs(setting)):
                self.cannot_tell("git -c sets a configuration that can run a command")
                return
            index += step
        if index:
            self.commands.append(("git", *words[index:]))

    def _trap(self, words: tuple[Word, ...], depth: int) -> None:
        if words[:1] == ("--",):
            words = words[1:]
        if len(words) >= 2 and words[0] not in ("-", "-p", "-l", "-P"):
            self._code(words[:1], "trap", depth)

    def _find(self, words: tuple[Word, ...], depth: int) -> None:
        start = None
        for index, word in enumerate(words):
            if start is None and word in FIND_EXEC:
                start = index + 1
            elif start is not None and word in (";", "+"):
                if index > start:
                    self._found(words[start:index], depth)
                start = None
        if start is not None and start < len(words):
            self._found(words[start:], depth)

    def _found(self, command: tuple[Word, ...], depth: int) -> None:
        """find -exec's command: each `{}` is a file's name (which the files decide)."""
        self.add(tuple(None if word and "{}" in word else word for word in command), depth + 1)


def _program(word: Word) -> str | None:
    """The program a command's first word names: `/bin/rm` and `\\rm` are `rm`."""
    if word is None or not word:
        return None
    return word.rsplit("/", 1)[-1]
