"""Approval events: a call's approval asked for, and the decision with who made it."""

from __future__ import annotations

import attrs

APPROVAL_DECISIONS = frozenset({"approved", "approved_for_session", "denied"})
APPROVAL_DECIDERS = frozenset({"policy", "user"})


@attrs.frozen
class ApprovalRequested:
    """A person was asked whether a call may run; `shown` is exactly what they saw.

    `rule` names the policy rule that asked.
    """

    ts: str
    run_id: str
    call_id: str
    name: str
    rule: str
    shown: str


@attrs.frozen
class ApprovalDecided:
    """Whether a call may run: `decision` is approved, approved_for_session or denied.

    `by` is "policy" (then `rule` names the rule) or "user"; `reason` is what the model is
    told when the call was denied.
    """

    ts: str
    run_id: str
    call_id: str
    name: str
    decision: str
    by: str
    rule: str | None = None
    reason: str | None = None
