"""The approvers a ToolRuntime consults: the policy decides, and for `ask` a person
answers, on a terminal (PolicyApprover) or through an MCP client (AsyncPolicyApprover).
Every decision is recorded (ApprovalRequested, ApprovalDecided); calls a person approved
for the session run without asking again."""

from __future__ import annotations

from typing import Final

import attrs

from mini_harness.agent.approval.policy import ApprovalPolicy, run_command_argv
from mini_harness.agent.approval.policy_file import POLICY_FILE
from mini_harness.agent.approval.prompt import Answer, AsyncPrompter, Prompter, render_call
from mini_harness.events import ApprovalDecided, ApprovalRequested
from mini_harness.runtime.approval import PendingCall


def _session_key(call: PendingCall) -> tuple[str, str]:
    given = run_command_argv(call.input)
    if call.definition.name == "run_command" and given and given[0] and not given[1]:
        return (call.definition.name, given[0][0])
    return (call.definition.name, "")


Decided = tuple[str, str, str | None, str | None]
"""An approval decision: the decision, who made it, the rule that did, and (when denied)
the reason the model is given."""
NO_TERMINAL: Final = ("no terminal", "there is no terminal to ask on")
NOT_IN_A_RERUN: Final = ("a re-run never asks", "a re-run never asks anyone")
"""Why no one is asked (a few words for the rule, a phrase for the reason)."""


@attrs.frozen
class Question:
    """An `ask` to put to a person: exactly what they are shown, and the rule that asks."""

    shown: str
    rule: str
    session_key: tuple[str, str]


@attrs.define
class PolicyApprover:
    """The Approver a ToolRuntime consults: the policy, then (for `ask`) the prompter.

    `prompter` is None when no one can be asked (`unable` says why: no terminal, or a
    re-run, which never asks): then `ask` is a denial. Calls the user approved for the
    session (the same tool; for run_command, the same program) run without asking again.
    """

    policy: ApprovalPolicy
    prompter: Prompter | None = None
    unable: tuple[str, str] = NO_TERMINAL
    _session: dict[tuple[str, str], str] = attrs.field(factory=dict, alias="_session")

    @property
    def policy_sha256(self) -> str | None:
        """The hash of the policy file in force, which ToolRuntime records in RunStarted."""
        return self.policy.sha256

    def __call__(self, call: PendingCall) -> str | None:
        prompter = self.prompter
        step = self.consider(call, self.unable if prompter is None else None)
        if isinstance(step, Question):
            assert prompter is not None  # nothing is asked when no one can answer
            step = self.answered(call, step, prompter.ask(step.shown))
        return self.record(call, step)

    def consider(self, call: PendingCall, unable: tuple[str, str] | None) -> Decided | Question:
        """The policy's decision, or for an `ask` the question, recorded as
        ApprovalRequested. `unable` says why no one can be asked (a few words for the rule,
        a phrase for the model), if no one can: then `ask` is a denial."""
        name = call.definition.name
        verdict = self.policy.decide(call.definition, call.input)
        if verdict.decision == "allow":
            return "approved", "policy", verdict.rule, None
        if verdict.decision == "deny":
            reason = (
                f"Call to {name} denied by the approval policy ({verdict.rule}). It did not run; "
                "do not retry it unchanged."
            )
            return "denied", "policy", verdict.rule, reason
        key = _session_key(call)
        if key in self._session and not verdict.firm:
            return (
                "approved",
                "user",
                f"approved for the session at call {self._session[key]}",
                None,
            )
        if unable is not None:
            reason = (
                f"Call to {name} needs approval ({verdict.rule}), but {unable[1]}, so it was "
                "denied. It did not run. The user can allow it with --approve auto or a rule in "
                f"{POLICY_FILE}."
            )
            return "denied", "policy", f"{verdict.rule}; {unable[0]}", reason
        shown = render_call(call.definition, call.input, verdict.rule)
        call.sink.emit(
            ApprovalRequested(
                call.timestamp(), call.run_id, call.call_id, name, verdict.rule, shown
            )
        )
        return Question(shown, verdict.rule, key)

    def answered(self, call: PendingCall, question: Question, answer: Answer) -> Decided:
        """The decision a person's answer to `question` makes."""
        if answer == "session":
            self._session[question.session_key] = call.call_id
            return "approved_for_session", "user", None, None
        if answer == "yes":
            return "approved", "user", None, None
        name = call.definition.name
        reason = f"The user denied the call to {name}. It did not run; ask what they want instead."
        return "denied", "user", None, reason

    def record(self, call: PendingCall, decided: Decided) -> str | None:
        """Record ApprovalDecided; the reason the call is denied, or None to let it run."""
        call.sink.emit(
            ApprovalDecided(
                call.timestamp(), call.run_id, call.call_id, call.definition.name, *decided
            )
        )
        return decided[-1]


@attrs.define
class AsyncPolicyApprover:
    """PolicyApprover's decisions, asking through an AsyncPrompter (an MCP client's user):
    `dispatch_async` awaits the answer while its event loop goes on serving."""

    policy: ApprovalPolicy
    prompter: AsyncPrompter
    _decider: PolicyApprover = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._decider = PolicyApprover(self.policy)

    @property
    def policy_sha256(self) -> str | None:
        return self.policy.sha256

    async def __call__(self, call: PendingCall) -> str | None:
        step = self._decider.consider(call, self.prompter.unable())
        if isinstance(step, Question):
            try:
                answer = await self.prompter.ask(step.shown)
            except Exception as exc:  # no answer came: nobody decided to let it run
                why = f"asking failed: {type(exc).__name__}"
                name = call.definition.name
                reason = (
                    f"Call to {name} needs approval, but {why}, so it was denied. It did not run."
                )
                return self._decider.record(
                    call, ("denied", "policy", f"{step.rule}; {why}", reason)
                )
            step = self._decider.answered(call, step, answer)
        return self._decider.record(call, step)
