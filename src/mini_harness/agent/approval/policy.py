"""The approval policy: rules decide each call (allow, ask, deny); approvers.py acts on it.

Rules are checked in order, the first match decides: the project's rules from
`.mini-harness/policy.toml`, then the defaults (read-only tools are allowed, everything
else asks). `--approve auto` turns `ask` into `allow`, `--approve never` into `deny`;
`deny` always stands. run_command without a sandbox asks every time, whatever allowed it,
and so does a shell line that a deny rule cannot be ruled out for (see shell_commands).
With no terminal to ask on, `ask` is a denial.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from mini_harness.agent.approval.policy_file import POLICY_FILE
from mini_harness.errors import PolicyError
from mini_harness.events import JsonValue
from mini_harness.runtime.control_file import read_control_file
from mini_harness.runtime.definitions import ToolDefinition

if TYPE_CHECKING:  # the shell grammar (tree-sitter) loads for the first command rule
    from mini_harness.agent.approval.shell_commands import CommandLine
    from mini_harness.agent.approval.shell_grammar import Word

DECISIONS: Final = ("allow", "ask", "deny")
APPROVE_MODES: Final = ("auto", "ask", "never")
_RULE_KEYS: Final = frozenset({"tool", "command", "readOnly", "destructive", "decision"})

Match = bool | str
"""Whether a rule matches a call: True, False, or (a string) why it cannot be told."""


def run_command_argv(tool_input: JsonValue) -> tuple[list[str], bool] | None:
    """A run_command input's argv and whether it runs through a shell; None if it has none."""
    if not isinstance(tool_input, dict):
        return None
    argv = tool_input.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return None
    return [str(a) for a in argv], bool(tool_input.get("shell", False))


def _starts_with(words: tuple[Word, ...], prefix: tuple[str, ...]) -> Match:
    """Whether a command's words start with `prefix` (`/bin/rm` is `rm`)."""
    if len(words) < len(prefix) or not prefix:
        return False
    pairs = [(word, wanted) for word, wanted in zip(words, prefix, strict=False)]
    first = pairs[0][0]
    pairs[0] = (None if first is None else first.rsplit("/", 1)[-1], prefix[0].rsplit("/", 1)[-1])
    if any(word is not None and word != wanted for word, wanted in pairs):
        return False
    return True if all(word is not None for word, _ in pairs) else "an expansion decides a word"


def _runs(line: CommandLine, prefix: tuple[str, ...]) -> Match:
    """Whether a command line runs a command starting with `prefix`, as far as it tells."""
    unclear: Match = False if line.unclear is None else line.unclear
    for words in line.commands:
        found = _starts_with(words, prefix)
        if found is True:
            return True
        if found is not False and unclear is False:
            unclear = found
    return unclear


@attrs.frozen
class PolicyRule:
    """One rule: which calls it matches and what it decides for them."""

    decision: str
    source: str  # where the rule comes from, e.g. ".mini-harness/policy.toml rule 2"
    tool: str = "*"  # a glob over tool names
    command: tuple[str, ...] | None = None  # run_command: the argv prefix
    read_only: bool | None = None
    destructive: bool | None = None

    def describe(self) -> str:
        """The rule as events and prompts name it."""
        parts = [f'tool "{self.tool}"'] if self.tool != "*" else []
        if self.command is not None:
            parts.append(f'command "{shlex.join(self.command)}"')
        for key, value in (("readOnly", self.read_only), ("destructive", self.destructive)):
            if value is not None:
                parts.append(f"{key} {str(value).lower()}")
        where = f" ({', '.join(parts)})" if parts else ""
        return f"{self.source}{where}: {self.decision}"

    def matches(self, definition: ToolDefinition, tool_input: JsonValue) -> Match:
        """True or False; for a command rule, possibly why it cannot be told."""
        if not fnmatch.fnmatchcase(definition.name, self.tool):
            return False
        hints = definition.annotations
        if self.read_only is not None and bool(hints and hints.read_only_hint) != self.read_only:
            return False
        if self.destructive is not None:
            # MCP's default: a tool that is not read-only may be destructive unless it says not.
            destructive = hints is None or (
                not hints.read_only_hint and hints.destructive_hint is not False
            )
            if destructive != self.destructive:
                return False
        if self.command is None:
            return True
        given = run_command_argv(tool_input)
        if given is None:
            return False
        argv, via_shell = given
        if self.decision == "allow":
            # Allowing is for the one program an argv names: a shell line can chain
            # anything after an allowed prefix, and a wrapper can run anything.
            return not via_shell and _starts_with(tuple(argv), self.command) is True
        from mini_harness.agent.approval.shell_commands import argv_commands, shell_commands

        line = shell_commands(" ".join(argv)) if via_shell else argv_commands(argv)
        return _runs(line, self.command)


DEFAULT_RULES: Final = (
    PolicyRule("allow", "default: read-only tools are allowed", read_only=True),
    PolicyRule("ask", "default: tools that are not read-only ask"),
)
NO_SANDBOX_RULE: Final = PolicyRule("ask", "no sandbox: run_command asks every time")


def _unsandboxed_command(definition: ToolDefinition) -> bool:
    hints = definition.annotations
    return definition.name == "run_command" and bool(hints and hints.open_world_hint)


@attrs.frozen
class Verdict:
    """What the policy decided for one call and the rule (as text) that decided it."""

    decision: str  # allow | ask | deny
    rule: str
    firm: bool = False  # an ask that --approve auto and approvals for the session do not lift


@attrs.frozen
class ApprovalPolicy:
    """The project's rules, then the defaults; `mode` is the --approve flag; `sha256` the
    hash of the policy file's bytes the rules were read from (None: not read from a file)."""

    rules: tuple[PolicyRule, ...] = ()
    mode: str = "ask"
    sha256: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.mode not in APPROVE_MODES:
            raise PolicyError(
                "--approve",
                f"--approve must be one of {', '.join(APPROVE_MODES)}, not {self.mode!r}",
            )

    def decide(self, definition: ToolDefinition, tool_input: JsonValue) -> Verdict:
        decision, text, firm = self._first_match(definition, tool_input)
        if firm and self.mode == "never":
            return Verdict("deny", f"--approve never, over {text}")
        if decision == "ask" and self.mode != "ask" and not firm:
            decision = "allow" if self.mode == "auto" else "deny"
            text = f"--approve {self.mode}, over {text}"
        if decision == "allow" and _unsandboxed_command(definition):
            decision = "deny" if self.mode == "never" else "ask"
            text = f"{NO_SANDBOX_RULE.describe()}, over {text}"
        return Verdict(decision, text, firm)

    def _first_match(
        self, definition: ToolDefinition, tool_input: JsonValue
    ) -> tuple[str, str, bool]:
        """The decision of the first rule that matches, its text, and whether it is firm.

        A deny rule that cannot be ruled out for a command line (the line cannot be read,
        or an expansion names a command) asks firmly: neither --approve auto nor an
        approval for the session lets the call run unseen."""
        for rule in (*self.rules, *DEFAULT_RULES):
            found = rule.matches(definition, tool_input)
            if found is True:
                return rule.decision, rule.describe(), False
            if found is not False:
                text = f"{rule.describe()}; cannot tell whether the line runs it ({found}): ask"
                return "ask", text, rule.decision == "deny"
        raise AssertionError("the default rules match every call")


def parse_rules(data: Mapping[str, Any], source: str) -> tuple[PolicyRule, ...]:
    """The rules of a parsed policy file; PolicyError names the rule and key at fault."""

    def refused(where: str, why: str) -> PolicyError:
        return PolicyError(source, f"{where}: {why}")

    unknown = set(data) - {"rules"}
    if unknown:
        raise refused(source, f"unknown top-level key {sorted(unknown)[0]!r}")
    raw = data.get("rules", [])
    if not isinstance(raw, list):
        raise refused(source, "`rules` must be an array of tables ([[rules]])")
    rules: list[PolicyRule] = []
    for number, entry in enumerate(raw, 1):
        where = f"{source} rule {number}"
        if not isinstance(entry, dict):
            raise refused(where, "must be a table")
        extra = set(entry) - _RULE_KEYS
        if extra:
            keys = ", ".join(sorted(_RULE_KEYS))
            raise refused(where, f"unknown key {sorted(extra)[0]!r} (use {keys})")
        decision = entry.get("decision")
        if decision not in DECISIONS:
            raise refused(
                where, f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}"
            )
        tool = entry.get("tool", "*")
        command = entry.get("command")
        for key, value, kind in (("tool", tool, str), ("command", command, str | None)):
            if not isinstance(value, kind):
                raise refused(where, f"{key} must be a string")
        words = None
        if command is not None:
            if not command.strip():
                raise refused(where, "command must not be empty")
            from mini_harness.agent.approval.shell_grammar import plain_words

            try:
                words = plain_words(command)
            except ValueError as exc:
                raise refused(where, f"command {command!r} {exc}") from None
        read_only, destructive = entry.get("readOnly"), entry.get("destructive")
        for key, value in (("readOnly", read_only), ("destructive", destructive)):
            if value is not None and not isinstance(value, bool):
                raise refused(where, f"{key} must be true or false")
        rules.append(PolicyRule(decision, where, tool, words, read_only, destructive))
    return tuple(rules)


def load_policy(workspace_root: str | os.PathLike[str], mode: str = "ask") -> ApprovalPolicy:
    """The workspace's policy file (if it has one) with the --approve mode, read once: the
    rules and the file's sha256 (of no bytes when there is no file) are what a run keeps,
    whatever happens to the file later. PolicyError names what is wrong with it."""
    raw = read_control_file(Path(workspace_root) / POLICY_FILE, POLICY_FILE)
    sha256 = hashlib.sha256(raw or b"").hexdigest()
    if raw is None:
        return ApprovalPolicy((), mode, sha256)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PolicyError(POLICY_FILE, f"{POLICY_FILE} is not UTF-8 text: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(POLICY_FILE, f"{POLICY_FILE} is not valid TOML: {exc}") from None
    return ApprovalPolicy(parse_rules(data, POLICY_FILE), mode, sha256)
