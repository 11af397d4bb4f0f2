"""The programs whose arguments say what else runs, as the shell-line reader knows them.

Wrappers run the command given after their options (`nice -n 5 rm x`); interpreters run
code given inline, from their input or from a script (`python -c`, `perl -e`, `sh file`);
git takes global options before its subcommand (`git -C . push`). shell_commands.py reads
a command's words with these tables and `scan_options` (a wrapper's options, read from
its words); nothing here reads text.

An option a table does not know is read both ways, as a flag and as an option taking the
next word, so that a wrapper's command is found whichever it is.
"""

from __future__ import annotations

from collections import deque
from typing import Final

import attrs
import regex

from mini_harness.agent.approval.shell_grammar import Word

SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh"})
FIND_EXEC: Final = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
SOURCING: Final = frozenset({".", "source"})
HELP_FLAGS: Final = frozenset({"--help", "--version", "-h", "-V", "--usage"})
"""Options after which an interpreter or shell only says what it is (and `-v` alone)."""


@attrs.frozen
class Wrapper:
    """A program that runs the command given after its options and operands."""

    short_values: str = ""  # short options taking a value: -n 5, -n5
    long_values: frozenset[str] = frozenset()  # long options taking a value: --user alice
    short_flags: str = ""  # short options known to take none
    long_flags: frozenset[str] = frozenset()  # long options known to take none
    operands: int = 0  # words between the options and the command (timeout's duration)
    assignments: bool = False  # NAME=VALUE words before the command (env)
    code: str = ""  # short options whose value is a shell line (flock -c)
    long_code: frozenset[str] = frozenset()  # long options whose value is a shell line
    joined_code: bool = False  # the rest of the words, joined, is a shell line (watch)
    opaque: str = ""  # short options after which the command cannot be told (env -S)
    long_opaque: frozenset[str] = frozenset()
    empty_shell: str | bool = False  # no command: a shell reading its input (True: always;
    # letters: when one of these short options is given, as sudo -s)
    input_words: bool = False  # words read from the input are added to the command (xargs)
    replace: str = ""  # the short option naming a text the input replaces (xargs -I X)
    replaces: str = ""  # a text the input may replace in the command (parallel's {})


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRAPPERS: Final = {
    "builtin": Wrapper(),
    "busybox": Wrapper(),
    "toybox": Wrapper(),
    "catchsegv": Wrapper(),
    "chroot": Wrapper(
        long_values=_words("userspec groups"),
        long_flags=_words("skip-chdir"),
        operands=1,
        empty_shell=True,
    ),
    "chrt": Wrapper("TPD", short_flags="abfiormpRev", operands=1),
    "command": Wrapper(short_flags="p"),
    "coproc": Wrapper(),
    "doas": Wrapper("uC", short_flags="ns", empty_shell="s"),
    "env": Wrapper(
        "uC",
        _words("unset chdir"),
        "i0v",
        _words("ignore-environment null debug"),
        assignments=True,
        opaque="S",
        long_opaque=_words("split-string"),
    ),
    "exec": Wrapper("a", short_flags="cl"),
    "fakeroot": Wrapper(
        "lfsi", _words("lib faked"), "u", _words("unknown-is-real"), empty_shell=True
    ),
    "faketime": Wrapper(short_flags="fm", operands=1),
    "firejail": Wrapper(empty_shell=True),
    "flock": Wrapper(
        "wEc",
        _words("timeout conflict-exit-code wait"),
        "sexunoFv",
        _words("shared exclusive nonblock nb unlock close no-fork verbose"),
        operands=1,
        code="c",
        long_code=_words("command"),
    ),
    "ionice": Wrapper("cnpPu", _words("class classdata pid pgid uid"), "t", _words("ignore")),
    "ltrace": Wrapper("aeEnopsuAlLDxXF", short_flags="bcCfhiSrtTV"),
    "nice": Wrapper("n", _words("adjustment")),
    "nohup": Wrapper(),
    "nsenter": Wrapper("tSGrwd", _words("target setuid setgid root wd"), empty_shell=True),
    "parallel": Wrapper(
        "jSP", _words("jobs sshlogin"), empty_shell=True, input_words=True, replaces="{}"
    ),
    "pkexec": Wrapper(long_values=_words("user"), empty_shell=True),
    "prlimit": Wrapper("p", _words("pid")),
    "proxychains": Wrapper("f", short_flags="q"),
    "proxychains4": Wrapper("f", short_flags="q"),
    "setsid": Wrapper(short_flags="cfw", long_flags=_words("ctty fork wait")),
    "sg": Wrapper(operands=1, code="c", joined_code=True),
    "stdbuf": Wrapper("ioe", _words("input output error")),
    "strace": Wrapper("abeEIoOpPsSuUXA", short_flags="cCdDfFhikqrtTvVwxyYzZ"),
    "sudo": Wrapper(
        "ugCDhprtTU",
        _words("user group close-from chdir host prompt role type command-timeout other-user"),
        "AbEHiKklnPSsvV",
        _words(
            "askpass background preserve-env set-home login remove-timestamp reset-timestamp"
            " non-interactive preserve-groups stdin shell validate"
        ),
        empty_shell="si",
    ),
    "systemd-run": Wrapper(
        "pEuMH",
        _words(
            "property setenv unit machine host uid gid nice working-directory slice description"
        ),
    ),
    "taskset": Wrapper(short_flags="acp", operands=1),
    "time": Wrapper("fo", _words("format output"), "pav", _words("portability append verbose")),
    "timeout": Wrapper(
        "sk",
        _words("signal kill-after"),
        "v",
        _words("foreground preserve-status verbose"),
        operands=1,
    ),
    "torsocks": Wrapper("uapP", short_flags="diq"),
    "unbuffer": Wrapper(short_flags="p"),
    "unshare": Wrapper("SGRw", _words("setuid setgid root wd"), "rUmnpiuCfT", empty_shell=True),
    "valgrind": Wrapper(),
    "watch": Wrapper("nd", _words("interval differences"), "tbegcxp", joined_code=True),
    "xargs": Wrapper(
        "aEdILnPs",
        _words("arg-file delimiter max-args max-procs max-chars process-slot-var"),
        "0ioprtx",
        _words("null interactive open-tty no-run-if-empty verbose exit show-limits"),
        input_words=True,
        replace="I",
        replaces="{}",
    ),
    "xvfb-run": Wrapper(
        "nsefwp",
        _words("server-num server-args error-file auth-file wait xauth-protocol"),
        "a",
        _words("auto-servernum"),
    ),
}
"""Wrappers by program name. su and runuser run a shell line (`-c`) or a shell: see
shell_commands.py."""


@attrs.frozen
class Interpreter:
    """A program that runs code: given inline (`code`), from its input (no script operand,
    or `-`), or from a script file."""

    code: str = ""  # short options whose value is code (python -c, perl -e)
    long_code: frozenset[str] = frozenset()  # node --eval
    values: str = ""  # short options taking a value, which ends the cluster (perl -Mstrict)
    long_values: frozenset[str] = frozenset()
    module: str = ""  # short options after which a named module runs (python -m): the rest
    # of the words are its arguments


INTERPRETERS: Final = (
    (regex.compile(r"(?:python|pypy)[0-9.]*"), Interpreter("c", values="WXQ", module="m")),
    (regex.compile(r"perl[0-9.]*"), Interpreter("eE", values="iIMmxdDlC0F")),
    (regex.compile(r"ruby[0-9.]*"), Interpreter("e", values="IrCEFxWl0")),
    (
        regex.compile(r"node(?:js)?|bun"),
        Interpreter("ep", _words("eval print"), "r", _words("require import loader")),
    ),
    (regex.compile(r"php[0-9.]*"), Interpreter("rBRFE", values="cdfz")),
    (regex.compile(r"lua(?:jit)?[0-9.]*"), Interpreter("e", values="l")),
    (regex.compile(r"R|Rscript"), Interpreter("e")),
    (regex.compile(r"tclsh[0-9.]*|wish[0-9.]*|jshell|irb|ghci"), Interpreter()),
)
"""Interpreters by the program names they go by (`python3.12`, `nodejs`)."""


def interpreter(program: str) -> Interpreter | None:
    """The interpreter `program` names, if it names one."""
    for names, spec in INTERPRETERS:
        if names.fullmatch(program):
            return spec
    return None


GIT_VALUES: Final = _words(
    "-C -c --git-dir --work-tree --namespace --super-prefix --config-env --list-cmds"
    " --attr-source --exec-path"
)
"""git's global options taking a value (`-C DIR`, `--git-dir=DIR`); its others take none
(an unknown one makes git fail, so it hides nothing)."""
GIT_HARMLESS_CONFIG: Final = regex.compile(
    r"(?i)(?:user|author|committer|color|advice|column|i18n|init|log|format|pull|push"
    r"|commit|tag|merge|rebase|safe)\.[a-z0-9.-]*"
)
"""Configuration keys `git -c` may set without running a command (a name, a colour, a
default); any other key (core.pager, core.fsmonitor, alias.*, diff.*.textconv,
include.path, ...) may name a command git runs."""
GIT_RUNS: Final = regex.compile(
    r"(?i).*(?:driver|program|command|cmd|editor|hook|helper|pager|tool).*"
)
"""Keys under those sections that still name a program (a merge driver, a merge tool)."""


def git_config_runs(setting: str) -> bool:
    """Whether `git -c KEY=VALUE` may make git run a command: any key outside a few
    sections that only name, colour and default things."""
    key = setting.partition("=")[0]
    return not GIT_HARMLESS_CONFIG.fullmatch(key) or bool(GIT_RUNS.fullmatch(key))


RUNUSER: Final = Wrapper(
    "ugGw", frozenset({"user", "group", "supp-group", "whitelist-environment"})
)


def says_what(words: tuple[Word, ...]) -> bool:
    """Whether `command`'s options are -v or -V (it says what a name is, runs nothing)."""
    for word in words:
        if word is None or not word.startswith("-") or word == "--":
            return False
        if "v" in word or "V" in word:
            return True
    return False


@attrs.define
class Scan:
    """What a wrapper's options say: where its command may start (and whether only an
    unknown option's reading says so), the short options given, the shell lines given to
    options (`flock -c LINE`), the texts the input replaces (`xargs -I {}`), and why the
    command cannot be told, if it cannot."""

    starts: set[tuple[int, bool]] = attrs.Factory(set)
    flags: set[str] = attrs.Factory(set)
    code: list[tuple[str, Word]] = attrs.Factory(list)
    replace: set[Word] = attrs.Factory(set)
    unclear: list[str] = attrs.Factory(list)


def scan_options(spec: Wrapper, words: tuple[Word, ...]) -> Scan:
    """Read a wrapper's options. Every reading is followed: an option the table does not
    know is a flag in one and takes the next word in the other (a guess: what only a guess
    finds is never a reason to ask). Each position is visited once per number of operands
    left and per guess, so this is linear in the words."""
    scan = Scan()
    queue: deque[tuple[int, int, bool]] = deque([(0, spec.operands, False)])
    seen: set[tuple[int, int, bool]] = set()
    while queue:
        state = queue.popleft()
        if state in seen:
            continue
        seen.add(state)
        index, operands, guessed = state
        steps = _option(spec, words, index, scan, guessed)
        if steps is not None:
            queue.extend((index + step, operands, guessed or guess) for step, guess in steps)
            continue
        word = words[index] if index < len(words) else ""
        if word is not None and word and operands:
            queue.append((index + 1, operands - 1, guessed))
        elif word and spec.assignments and "=" in word:
            queue.append((index + 1, operands, guessed))
        else:
            scan.starts.add((index, guessed))
    return scan


def _option(
    spec: Wrapper, words: tuple[Word, ...], index: int, scan: Scan, guessed: bool
) -> list[tuple[int, bool]] | None:
    """The readings of the option at `index`: how many words each takes, and whether it is
    a guess; what it gives goes into `scan`. None when the word is no option; none at all
    when the option ends the reading (a shell line, an opaque one, an expansion)."""
    if index >= len(words):
        return None
    word = words[index]
    end: list[tuple[int, bool]] = []  # the reading stops here
    if word is None:
        if not guessed:
            scan.unclear.append("'s arguments are expansions")
        return end
    if word == "--":
        return [(1, False)]
    if word.startswith("--") and len(word) > 2:
        name, has_value, value = word[2:].partition("=")
        if name in spec.long_opaque:
            scan.unclear.append(f" --{name} splits a string into a command")
            return end
        if name in spec.long_code:
            scan.code.append((f"--{name}", value if has_value else word_at(words, index + 1)))
            return end
        if has_value or name in spec.long_flags:
            return [(1, False)]
        return [(2, False)] if name in spec.long_values else [(1, False), (2, True)]
    if not word.startswith("-") or len(word) < 2:
        return None
    for position, letter in enumerate(word[1:], 2):
        scan.flags.add(letter)
        if letter in spec.opaque:
            scan.unclear.append(f" -{letter} splits a string into a command")
            return end
        attached = word[position:]
        if letter in spec.code:
            scan.code.append((f"-{letter}", attached or word_at(words, index + 1)))
            return end
        if letter in spec.short_values:
            if letter == spec.replace:
                scan.replace.add(attached or word_at(words, index + 1))
            return [(1 if attached else 2, False)]
        if letter not in spec.short_flags and not attached:
            return [(1, False), (2, True)]
    return [(1, False)]


def filled(spec: Wrapper, command: tuple[Word, ...], replace: set[Word]) -> tuple[Word, ...]:
    """The command with what its input decides: each word holding a text the input
    replaces (`xargs -I {}`, parallel's `{}`) is an expansion; without `-I`, the words the
    input adds at its end are one more."""
    texts = {text for text in (*replace, spec.replaces) if text}
    filled = tuple(
        None if word is not None and any(text in word for text in texts) else word
        for word in command
    )
    return filled if replace else (*filled, None)


def word_at(words: tuple[Word, ...], index: int) -> Word:
    return words[index] if index < len(words) else ""
