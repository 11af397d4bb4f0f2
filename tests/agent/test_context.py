"""The context builder: project rules, the parts of a request, the report, the budget."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson

from mini_harness.agent import (
    Message,
    ModelRequest,
    ToolCall,
    load_project_rules,
    request_hash,
    request_parts,
    system_message,
)
from mini_harness.agent.context import MAX_RULES_BYTES, manual_tool_message, trim_to_budget
from mini_harness.events import ProjectRules, ToolDefinition
from mini_harness.runtime.context_report import render_context_report

TOOLS = (ToolDefinition("echo", "Echo.", {"type": "object"}),)


class TestProjectRules:
    def test_root_then_nearer(self, tmp_path: Path) -> None:
        """AGENTS.md at the root comes first, then nearer ones down to the working directory."""
        (tmp_path / "a" / "b").mkdir(parents=True)
        (tmp_path / "AGENTS.md").write_text("root")
        (tmp_path / "a" / "b" / "AGENTS.md").write_text("deep")
        (tmp_path / "a" / "AGENTS.md").write_text("middle")
        rules = load_project_rules(tmp_path, tmp_path / "a" / "b")
        assert [(r.path, r.content) for r in rules] == [
            ("AGENTS.md", "root"),
            ("a/AGENTS.md", "middle"),
            ("a/b/AGENTS.md", "deep"),
        ]

    def test_siblings_and_outside_are_not_read(self, tmp_path: Path) -> None:
        """Rules of other branches, or of a working directory outside, are not loaded."""
        (tmp_path / "a").mkdir()
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "AGENTS.md").write_text("no")
        (tmp_path / "AGENTS.md").write_text("root")
        assert [r.path for r in load_project_rules(tmp_path, tmp_path / "a")] == ["AGENTS.md"]
        assert [r.path for r in load_project_rules(tmp_path / "a", tmp_path)] == []

    def test_hash_of_the_bytes(self, tmp_path: Path) -> None:
        """Each rule records the SHA-256 of the file's bytes."""
        (tmp_path / "AGENTS.md").write_text("x")
        (rule,) = load_project_rules(tmp_path)
        assert rule.sha256 == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"

    def test_a_fifo_is_skipped_with_a_warning(self, tmp_path: Path) -> None:
        """A FIFO named AGENTS.md is skipped at once with a warning, never waited on."""
        os.mkfifo(tmp_path / "AGENTS.md")
        warnings: list[str] = []
        assert load_project_rules(tmp_path, warn=warnings.append) == ()
        assert warnings == ["project rules AGENTS.md skipped: not a regular file"]

    def test_a_symlink_leaving_the_workspace_is_skipped(self, tmp_path: Path) -> None:
        """AGENTS.md linking to a file outside the workspace is not read."""
        (tmp_path / "secret.txt").write_text("outside")
        (tmp_path / "ws").mkdir()
        (tmp_path / "ws" / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
        warnings: list[str] = []
        assert load_project_rules(tmp_path / "ws", warn=warnings.append) == ()
        assert warnings == [
            "project rules AGENTS.md skipped: a symlink leading outside the workspace"
        ]

    def test_a_symlink_inside_the_workspace_is_read(self, tmp_path: Path) -> None:
        """AGENTS.md linking to a file inside the workspace is read under its own path."""
        (tmp_path / "docs").mkdir()
        (tmp_path / "docs" / "rules.md").write_text("inside")
        (tmp_path / "AGENTS.md").symlink_to("docs/rules.md")
        warnings: list[str] = []
        rules = load_project_rules(tmp_path, warn=warnings.append)
        assert [(r.path, r.content) for r in rules] == [("AGENTS.md", "inside")]
        assert warnings == []

    def test_size_limit(self, tmp_path: Path) -> None:
        """A rules file of up to 256 KiB is read; a larger one is skipped with a warning."""
        (tmp_path / "a").mkdir()
        (tmp_path / "AGENTS.md").write_text("x" * MAX_RULES_BYTES)
        (tmp_path / "a" / "AGENTS.md").write_text("x" * (MAX_RULES_BYTES + 1))
        warnings: list[str] = []
        rules = load_project_rules(tmp_path, tmp_path / "a", warn=warnings.append)
        assert [r.path for r in rules] == ["AGENTS.md"]
        assert warnings == [
            "project rules a/AGENTS.md skipped: 262,145 bytes, more than the 262,144 "
            "bytes project rules may have"
        ]

    def test_not_utf8_is_skipped_with_a_warning(self, tmp_path: Path) -> None:
        """A rules file that is not UTF-8 text is skipped with a warning."""
        (tmp_path / "AGENTS.md").write_bytes(b"\xff\xfe")
        warnings: list[str] = []
        assert load_project_rules(tmp_path, warn=warnings.append) == ()
        assert warnings == ["project rules AGENTS.md skipped: not UTF-8 text"]

    def test_rules_follow_the_system_prompt(self) -> None:
        """The system message is the prompt, then each rule file under its path."""
        rules = (ProjectRules("AGENTS.md", "0", "Be brief.\n"),)
        assert system_message("Prompt.", rules).content == (
            "Prompt.\n\nProject rules from AGENTS.md:\nBe brief."
        )
        assert system_message("Prompt.", ()).content == "Prompt."


class TestParts:
    def test_order_and_labels(self) -> None:
        """Parts come as System prompt, Project rules, Tool definitions, Conversation, Tool
        result."""
        rules = (ProjectRules("AGENTS.md", "0", "Be brief."),)
        messages = [
            system_message("S", rules),
            Message("user", "task"),
            manual_tool_message({"name": "echo"}),
        ]
        parts = request_parts("S", rules, TOOLS, messages)
        assert [p.label for p in parts] == [
            "System prompt",
            "Project rules",
            "Tool definitions",
            "Conversation",
            "Tool result",
        ]
        assert parts[3].text == "user: task"

    def test_conversation_rendering(self) -> None:
        """Conversation shows `role: content`, tool calls and tool results, blank-separated."""
        call = ToolCall("c1", "echo", '{"text":"a"}')
        messages = [
            system_message("S", ()),
            Message("user", "go"),
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", '{"text":"a"}', tool_call_id="c1", name="echo"),
        ]
        conversation = request_parts("S", (), TOOLS, messages)[-1]
        assert conversation.text == (
            'user: go\n\nassistant: \ntool call echo({"text":"a"})\n\ntool (echo): {"text":"a"}'
        )

    def test_report_layout(self) -> None:
        """The report keeps the reference's layout: labels padded to 22, ~N tokens, Total."""
        parts = request_parts("S" * 400, (), TOOLS, [system_message("x", ()), Message("user", "t")])
        report = render_context_report(parts)
        assert report.splitlines()[:3] == [
            "Context Explorer",
            "",
            "System prompt          ~100 tokens",
        ]
        assert report.endswith(f"{'Total':<22} ~{sum(p.tokens for p in parts):,} tokens\n")


class TestRequestHash:
    def test_same_request_same_hash(self) -> None:
        """Equal requests hash alike; any change to messages, tools or params changes it."""
        base = ModelRequest((Message("user", "a"),), TOOLS, {"temperature": 0.2})
        assert request_hash(base) == request_hash(
            ModelRequest((Message("user", "a"),), TOOLS, {"temperature": 0.2})
        )
        assert len(request_hash(base)) == 64
        for other in (
            ModelRequest((Message("user", "b"),), TOOLS, {"temperature": 0.2}),
            ModelRequest((Message("user", "a"),), (), {"temperature": 0.2}),
            ModelRequest((Message("user", "a"),), TOOLS, {"temperature": 0.3}),
        ):
            assert request_hash(other) != request_hash(base)

    def test_documented_definition(self) -> None:
        """The hash is SHA-256 of {"messages", "params", "tools"} as compact sorted-key JSON."""
        call = ToolCall("c", "echo", "{}")
        messages = (Message("user", "a"), Message("assistant", "", tool_calls=(call,)))
        request = ModelRequest(messages, TOOLS, {"temperature": 0.2})
        canonical = orjson.dumps(
            {"tools": [{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}],
             "params": request.params,
             "messages": [{"role": "user", "content": "a"},
                          {"role": "assistant", "content": "",
                           "toolCalls": [{"id": "c", "name": "echo", "arguments": "{}"}]}]},
            option=orjson.OPT_SORT_KEYS,
        )  # fmt: skip
        assert request_hash(request) == hashlib.sha256(canonical).hexdigest()


class TestTrim:
    def history(self) -> list[Message]:
        big = "y" * 4_000
        messages = [system_message("S", ()), Message("user", "task")]
        for n in range(3):
            call = ToolCall(f"c{n}", "read_file", "{}")
            messages.append(Message("assistant", "", tool_calls=(call,)))
            messages.append(Message("tool", big, tool_call_id=f"c{n}", name="read_file"))
        return messages

    def test_oldest_first_latest_kept(self) -> None:
        """The oldest tool results go first; the latest turn and the task stay."""
        messages = self.history()
        trim = trim_to_budget(
            messages, system_prompt="S", rules=(), tools=TOOLS, budget=1_500,
            trimmable_before=len(messages) - 2,
        )  # fmt: skip
        assert trim is not None
        assert [entry.index for entry in trim.replaced] == [3, 5]
        assert trim.messages[1] == Message("user", "task")
        assert trim.messages[-1] == messages[-1]
        assert trim.tokens_after <= 1_500 < trim.tokens_before
        assert trim.messages[3].content == trim.replaced[0].content

    def test_already_fits(self) -> None:
        """A request within the budget is left alone."""
        messages = self.history()
        trim = trim_to_budget(
            messages, system_prompt="S", rules=(), tools=TOOLS, budget=100_000,
            trimmable_before=len(messages),
        )  # fmt: skip
        assert trim is not None
        assert trim.replaced == ()

    def test_cannot_fit(self) -> None:
        """When trimming every old result is not enough, the trim does not fit, and says
        the least the request needs: with that budget it fits."""
        messages = self.history()
        trim = trim_to_budget(
            messages, system_prompt="S", rules=(), tools=TOOLS, budget=1_100,
            trimmable_before=len(messages) - 2,
        )  # fmt: skip
        assert not trim.fits
        assert trim.tokens_after > 1_100
        enough = trim_to_budget(
            messages, system_prompt="S", rules=(), tools=TOOLS, budget=trim.tokens_after,
            trimmable_before=len(messages) - 2,
        )  # fmt: skip
        assert enough.fits
