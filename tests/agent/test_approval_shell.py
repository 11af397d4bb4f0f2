"""Command rules read shell lines with a shell grammar: a denied program is found wherever
the line runs it, and a line that cannot be read asks instead of running."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_harness.agent.approval import ApprovalPolicy, PolicyApprover, PolicyRule, load_policy
from mini_harness.cli import cli
from mini_harness.events import ApprovalDecided
from mini_harness.runtime import ToolDefinition, ToolRegistry, ToolRuntime
from mini_harness.tools import register_coding_tools
from mini_harness.transcripts import read_transcript
from tests.agent.test_approval import ScriptedPrompter, run_ok, write_policy

DENY_RM = """
[[rules]]
tool = "run_command"
command = "rm"
decision = "deny"
"""

HIDDEN_RM = [
    "(rm data.txt)",
    "{ rm data.txt; }",
    "if true; then rm data.txt; fi",
    "while true; do rm data.txt; break; done",
    "case x in x) rm data.txt;; esac",
    "X=1 rm data.txt",
    "command rm data.txt",
    "env rm data.txt",
    "env -i HOME=/ rm data.txt",
    "exec rm data.txt",
    "time rm data.txt",
    "! rm data.txt",
    "nice rm data.txt",
    "nice -n 5 rm data.txt",
    "nohup rm data.txt",
    "timeout 5 rm data.txt",
    "sudo -u root rm data.txt",
    "echo data.txt | xargs rm",
    "echo data.txt | xargs -n 1 -I{} rm {}",
    "find . -name data.txt -exec rm {} \\;",
    "sh -c 'rm data.txt'",
    'bash -c "rm data.txt"',
    "bash -lc 'rm data.txt'",
    "sh -c \"sh -c 'rm data.txt'\"",
    "eval 'rm data.txt'",
    "trap 'rm data.txt' EXIT",
    "echo $(rm data.txt)",
    "echo `rm data.txt`",
    'echo "$(rm data.txt)"',
    "X=$(rm data.txt)",
    "cat <(rm data.txt)",
    "echo ${X:-$(rm data.txt)}",
    "true | rm data.txt",
    "true && rm data.txt",
    "false || rm data.txt",
    "true; rm data.txt",
    "true\nrm data.txt",
    "true & rm data.txt",
    "f() { rm data.txt; }; f",
    "/bin/rm data.txt",
    "\\rm data.txt",
    'r"m" data.txt',
    "busybox rm data.txt",
    # inside ${...} patterns the grammar keeps whole
    "echo ${X#$(rm data.txt)}",
    'echo "${X%%`rm data.txt`}"',
    "echo ${X:+`rm data.txt`}",
    "echo ${X#${Y:-$(rm data.txt)}}",
    "Y=${X#*$(rm data.txt)} true",
    # more wrappers, and wrappers of wrappers
    "xargs sh -c 'rm data.txt'",
    "chroot / rm data.txt",
    "chroot --userspec=a:b / rm data.txt",
    "stdbuf -oL rm data.txt",
    "setsid -w rm data.txt",
    "doas -u root rm data.txt",
    "command -p rm data.txt",
    "builtin rm data.txt",
    "timeout --foreground -s KILL 5 rm data.txt",
    "strace -o trace.log -e trace=file rm data.txt",
    "flock /tmp/lock rm data.txt",
    "flock /tmp/lock -c 'rm data.txt'",
    "su root -c 'rm data.txt'",
    "runuser -u nobody -- rm data.txt",
    "sg users 'rm data.txt'",
    "unshare -r rm data.txt",
]

UNREADABLE = [
    ('eval "$CMD"', "eval of an expansion"),
    ("$CMD data.txt", "a command is named by an expansion"),
    ("r{m,} data.txt", "a command is named by an expansion"),
    ("echo 'rm data.txt' | sh", "a shell reads its commands from its input"),
    ('sh -c "$CMD"', "a shell's arguments are expansions"),
    ('sh -c -- "$CMD"', "a shell's -c of an expansion"),
    ("echo 'unbalanced", "the shell grammar cannot parse it"),
    ("r\\\nm data.txt", "a backslash-newline joins two words"),
    ("alias r=rm", "an alias can rename any command"),
    ("env -S 'rm data.txt'", "env -S splits a string into a command"),
    # shells and interpreters fed from their input or a file, or given code
    ("sh < script.sh", "a shell reads its commands from its input"),
    ("bash -s < script.sh", "a shell reads its commands from its input"),
    ("bash script.sh", "a shell runs the commands of a script file"),
    (". ./script.sh", "`.` runs the commands of a file"),
    ("source script.sh", "`source` runs the commands of a file"),
    ("python3 -c 'import os; os.remove(\"data.txt\")'", "python3 runs code it is given (-c)"),
    ("python -W ignore -c pass", "python runs code it is given (-c)"),
    ("perl -e 'unlink \"data.txt\"'", "perl runs code it is given (-e)"),
    ("perl -i.bak -pe 's/a/b/' data.txt", "perl runs code it is given (-e)"),
    ('node -e \'require("fs").rmSync("data.txt")\'', "node runs code it is given (-e)"),
    ("node --eval 'x'", "node runs code it is given (--eval)"),
    ("ruby -e 'File.delete(\"data.txt\")'", "ruby runs code it is given (-e)"),
    ("echo 'import os' | python3", "python3 reads its code from its input"),
    # what the input decides
    ("echo 'rm data.txt' | xargs sh -c", "a shell's arguments are expansions"),
    ("echo 'rm data.txt' | xargs -I{} sh -c {}", "a shell's arguments are expansions"),
    ("find . -name '*.sh' -exec sh -c {} \\;", "a shell's arguments are expansions"),
    ("echo rm data.txt | sudo -s", "sudo runs a shell that reads its commands from its input"),
    ("echo rm data.txt | su", "su runs a shell that reads its commands from its input"),
    # git settings that name a command
    ("git -c core.pager='rm data.txt' log", "git -c sets a configuration that can run a command"),
    ("git -c alias.x='!rm data.txt' x", "git -c sets a configuration that can run a command"),
    # a single quote inside ${...}: quoting or not depends on where the ${...} stands
    ("echo \"${X:+'$(rm data.txt)'}\"", "a ${...} pattern holds a quoted command substitution"),
]

HARMLESS = [
    "echo rm data.txt",
    "git log --oneline | head -5",
    "ls *.txt && cat data.txt",
    "command -v rm",
    "grep -r 'rm ' .",
    "python -m pytest -q",
    "python3 --version",
    "node app.js",
    "git -c user.name=a -c user.email=a@b commit -m rm",
    "echo ${X#rm}",
    "ls | xargs -n1 echo",
]


@pytest.fixture(name="auto")
def _auto(ws: Path) -> ApprovalPolicy:
    """The rm deny rule under --approve auto."""
    write_policy(ws, DENY_RM)
    return load_policy(ws, "auto")


def run_command_definition() -> ToolDefinition:
    """run_command's definition when it runs sandboxed (rules may allow it)."""
    registry = ToolRegistry()
    register_coding_tools(registry, ".", sandbox=True)
    tool = registry.get("run_command")
    assert tool is not None
    return tool.definition


def decide_line(policy: ApprovalPolicy, line: str) -> tuple[str, str, bool]:
    verdict = policy.decide(run_command_definition(), {"argv": [line], "shell": True})
    return verdict.decision, verdict.rule, verdict.firm


class TestDenyRulesFindTheCommand:
    @pytest.mark.parametrize("line", HIDDEN_RM)
    def test_rm_is_found_wherever_the_line_runs_it(self, auto: ApprovalPolicy, line: str) -> None:
        """The deny rule stands, under --approve auto, however the line runs rm."""
        decision, rule, _ = decide_line(auto, line)
        assert (decision, rule) == (
            "deny",
            '.mini-harness/policy.toml rule 1 (tool "run_command", command "rm"): deny',
        )

    @pytest.mark.parametrize(
        "argv",
        [["env", "rm", "x"], ["sh", "-c", "rm x"], ["xargs", "rm"], ["nice", "/bin/rm", "x"]],
    )
    def test_an_argv_is_seen_through_its_wrappers(self, ws: Path, argv: list[str]) -> None:
        """Without a shell too, a wrapper's command is matched."""
        write_policy(ws, DENY_RM)
        verdict = load_policy(ws, "auto").decide(
            run_command_definition(), {"argv": argv, "shell": False}
        )
        assert verdict.decision == "deny"

    @pytest.mark.parametrize("line", HARMLESS)
    def test_other_lines_are_not_denied(self, auto: ApprovalPolicy, line: str) -> None:
        """A line that does not run rm is decided by the other rules (auto: allowed)."""
        assert decide_line(auto, line)[0] == "allow"


DENY_PUSH = """
[[rules]]
tool = "run_command"
command = "git push"
decision = "deny"
"""


class TestGitGlobalOptions:
    @pytest.mark.parametrize(
        "line",
        [
            "git -C . push",
            "git --git-dir=.git push origin main",
            "git --git-dir .git --work-tree . push",
            "git --no-pager -P push",
            "git -c user.name=a push",
            "cd sub && git -C .. push --force",
        ],
    )
    def test_a_push_rule_matches_after_global_options(self, ws: Path, line: str) -> None:
        """A rule on `git push` is not escaped by putting git's global options first."""
        write_policy(ws, DENY_PUSH)
        decision, rule, _ = decide_line(load_policy(ws, "auto"), line)
        assert (decision, rule) == (
            "deny",
            '.mini-harness/policy.toml rule 1 (tool "run_command", command "git push"): deny',
        )

    @pytest.mark.parametrize("line", ["git -C . status", "git --no-pager log -1", "git pull"])
    def test_other_subcommands_are_not_denied(self, ws: Path, line: str) -> None:
        """Only the subcommand the rule names is denied."""
        write_policy(ws, DENY_PUSH)
        assert decide_line(load_policy(ws, "auto"), line)[0] == "allow"

    def test_an_allow_rule_is_not_widened_by_global_options(self, ws: Path) -> None:
        """`allow git status` allows that argv alone: `git -c core.fsmonitor=... status`
        (which runs a command) still asks."""
        write_policy(
            ws, '[[rules]]\ntool = "run_command"\ncommand = "git status"\ndecision = "allow"\n'
        )
        policy = load_policy(ws, "ask")
        definition = run_command_definition()
        plain = policy.decide(definition, {"argv": ["git", "status"]})
        assert plain.decision == "allow"
        argv = ["git", "-c", "core.fsmonitor=rm data.txt", "status"]
        assert policy.decide(definition, {"argv": argv}).decision == "ask"


class TestUnreadableLinesAsk:
    @pytest.mark.parametrize(("line", "why"), UNREADABLE)
    def test_a_line_that_cannot_be_cleared_asks_even_under_auto(
        self, auto: ApprovalPolicy, line: str, why: str
    ) -> None:
        """A line the deny rule cannot be ruled out for asks, and --approve auto does not
        lift it; the rule says why."""
        decision, rule, firm = decide_line(auto, line)
        assert (decision, firm) == ("ask", True)
        assert rule == (
            '.mini-harness/policy.toml rule 1 (tool "run_command", command "rm"): deny; '
            f"cannot tell whether the line runs it ({why}): ask"
        )

    def test_never_denies_it(self, ws: Path) -> None:
        """Under --approve never such a line is denied."""
        write_policy(ws, DENY_RM)
        assert decide_line(load_policy(ws, "never"), 'eval "$CMD"')[0] == "deny"

    def test_without_a_deny_rule_nothing_is_unclear(self, ws: Path) -> None:
        """With no command rule, a line the grammar cannot read is decided as any other."""
        assert decide_line(load_policy(ws, "auto"), 'eval "$CMD"')[0] == "allow"

    def test_yes_for_the_session_does_not_cover_an_unclear_line(self, ws: Path) -> None:
        """A session approval covers later shell lines, but not one that may run rm."""
        write_policy(ws, DENY_RM)
        registry = ToolRegistry()
        register_coding_tools(registry, ws, sandbox=False)
        prompter = ScriptedPrompter("session", "no")
        approver = PolicyApprover(load_policy(ws, "ask"), prompter)
        runtime = ToolRuntime(registry, approver=approver)
        assert run_ok(runtime, ["true"], shell=True)
        assert run_ok(runtime, ["echo hi"], shell=True)  # the session's approval
        assert not run_ok(runtime, ['eval "$CMD"'], shell=True)  # asked again: no
        assert len(prompter.shown) == 2


class TestThroughTheCli:
    def test_a_hostile_model_cannot_hide_rm_in_a_subshell(self, ws: Path, tmp_path: Path) -> None:
        """`run --approve auto`: each disguised rm is denied by the policy and the file
        stays; the transcript says so."""
        write_policy(ws, DENY_RM)
        (ws / "data.txt").write_text("keep me\n")
        lines = ["(rm data.txt)", "{ rm data.txt; }", "env rm data.txt", "sh -c 'rm data.txt'"]
        calls = [
            {"name": "run_command", "arguments": {"argv": [line], "shell": True}} for line in lines
        ]
        script = tmp_path / "s.json"
        script.write_bytes(orjson.dumps([{"toolCalls": calls}, {"text": "done"}]))
        log = tmp_path / "t.jsonl"
        cwd = Path.cwd()
        os.chdir(ws)
        try:
            args = ["run", "clean up", "--model", f"script:{script}", "--approve", "auto"]
            result = CliRunner().invoke(
                cli, [*args, "--log", str(log)], env={"MINI_HARNESS_MODEL": None}
            )
        finally:
            os.chdir(cwd)
        assert result.exit_code == 0, result.output
        assert (ws / "data.txt").read_text() == "keep me\n"
        decided = [r.event for r in read_transcript(log) if isinstance(r.event, ApprovalDecided)]
        assert [(d.decision, d.by) for d in decided] == [("denied", "policy")] * 4


class TestHostileLines:
    @pytest.mark.parametrize(
        "line",
        [
            "nice " * 5000 + "rm data.txt",
            "$(" * 3000 + "rm data.txt" + ")" * 3000,
            "(" * 5000 + "rm data.txt" + ")" * 5000,
            "sh -c " + "'sh -c " * 40 + "rm",
            '"' * 10_001,
        ],
        ids=["wrappers", "substitutions", "subshells", "shells", "quotes"],
    )
    def test_deep_lines_ask_instead_of_failing(self, auto: ApprovalPolicy, line: str) -> None:
        """However deep a line nests, it is decided (here: asked, firmly), never a crash."""
        decision, _, firm = decide_line(auto, line)
        assert (decision, firm) in {("ask", True), ("deny", False)}

    @pytest.mark.parametrize(
        "line",
        [")" * 100_000, "${x#" * 25_000, "((0" * 33_000, "$(" * 50_000],
        ids=["parens", "patterns", "arithmetic", "substitutions"],
    )
    def test_a_long_hostile_line_is_decided_in_linear_time(
        self, auto: ApprovalPolicy, line: str
    ) -> None:
        """Shapes on which the grammar's error recovery goes quadratic (minutes for 100 KB)
        are cut at a bounded amount of work: the line is decided (asked or denied) at once."""
        started = time.perf_counter()
        decision, _, firm = decide_line(auto, line + " rm data.txt")
        assert time.perf_counter() - started < 5
        assert (decision, firm) in {("ask", True), ("deny", False)}

    @given(st.text(alphabet=st.sampled_from(list("rm ;|&$()`'\"\\{}<>\n-cx=*!")), max_size=60))
    @settings(max_examples=300, deadline=None)
    def test_any_line_is_decided(self, line: str) -> None:
        """Any text is read without an exception: a deny, an ask or an allow."""
        policy = ApprovalPolicy((PolicyRule("deny", "rule 1", "run_command", ("rm",)),), "auto")
        assert decide_line(policy, line)[0] in {"allow", "ask", "deny"}
