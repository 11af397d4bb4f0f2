"""Approval: a policy decides each call (allow, ask, deny) and an approver acts on it,
asking a person (`prompt`, on a terminal) when the policy says ask.

The rules come from `.mini-harness/policy.toml` (`policy_file`) and the defaults; a
shell line is read with a shell grammar (`shell_commands` over `shell_grammar`, tree-sitter
bash), which is why this package is imported only where calls are approved, not with
`mini_harness.agent`.
"""

from __future__ import annotations

from mini_harness.agent.approval.approvers import (
    NOT_IN_A_RERUN,
    AsyncPolicyApprover,
    PolicyApprover,
)
from mini_harness.agent.approval.policy import (
    APPROVE_MODES,
    DECISIONS,
    ApprovalPolicy,
    PolicyRule,
    Verdict,
    load_policy,
    parse_rules,
)
from mini_harness.agent.approval.policy_file import POLICY_FILE
from mini_harness.agent.approval.prompt import (
    AsyncPrompter,
    Prompter,
    TerminalPrompter,
    render_call,
    terminal_prompter,
)

__all__ = [
    "APPROVE_MODES",
    "DECISIONS",
    "NOT_IN_A_RERUN",
    "POLICY_FILE",
    "ApprovalPolicy",
    "AsyncPolicyApprover",
    "AsyncPrompter",
    "PolicyApprover",
    "PolicyRule",
    "Prompter",
    "TerminalPrompter",
    "Verdict",
    "load_policy",
    "parse_rules",
    "render_call",
    "terminal_prompter",
]
