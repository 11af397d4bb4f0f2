"""The call protocol: every ToolCalled gets exactly one terminal event of the same run and
tool, and call ids are unique."""

from __future__ import annotations

import attrs

from mini_harness.events import ModelRequested, ModelResponded, RunFinished, RunStarted

AgentRunEvent = RunStarted | ModelRequested | ModelResponded | RunFinished


@attrs.frozen
class ProtocolProblem:
    """A line that breaks the call protocol, with where it is."""

    line: int
    seq: int
    call_id: str | None
    message: str

    def describe(self) -> str:
        return f"line {self.line} (seq {self.seq}): {self.message}"


@attrs.define
class OpenCall:
    """A ToolCalled seen without its terminal event (yet): in doubt if the log ends here.

    Not frozen: one is made per call while folding millions of events, and a frozen attrs
    class costs several times as much to build. Treat it as read-only.
    """

    line: int
    seq: int
    run_id: str
    call_id: str
    name: str


class CallProtocol:
    """Feed it the call events of a transcript in order; it collects protocol problems.

    Works on plain fields, for verify and the fold alike. Memory grows with the number of
    distinct call ids (to catch reuse), not with event size. `open_calls` (call id to its
    OpenCall, in the order they began) and `seen` (the ids of every call that began, open
    or ended) are the whole state.
    """

    def __init__(self) -> None:
        self.problems: list[ProtocolProblem] = []
        self.open_calls: dict[str, OpenCall] = {}
        # One set of every id, not one of ended calls: a new call costs one lookup and one
        # insert, and an ended call none (the ended ones are those not open).
        self.seen: set[str] = set()

    def called(self, line: int, seq: int, run_id: str, call_id: str, name: str) -> bool:
        """Record a ToolCalled; False (and a problem) if its call id was used before."""
        if call_id in self.seen:
            self.problems.append(
                ProtocolProblem(line, seq, call_id, f"callId {call_id} is used again")
            )
            return False
        self.seen.add(call_id)
        self.open_calls[call_id] = OpenCall(line, seq, run_id, call_id, name)
        return True

    def finished(  # noqa: PLR0917 - the fields of a terminal event, positional
        self, line: int, seq: int, kind: str, call_id: str, run_id: str, name: str
    ) -> OpenCall | None:
        """Record a terminal event; return the call it closes (None if it closes nothing).

        A terminal event whose run or tool differs from its ToolCalled's still ends the
        call (the call is as its ToolCalled recorded it), and is reported.
        """
        opened = self.open_calls.pop(call_id, None)
        if opened is None:
            ended = call_id in self.seen  # seen and not open: it ended
            message = f"{kind} for call {call_id}, which " + (
                "already ended" if ended else "has no ToolCalled"
            )
        elif run_id != opened.run_id:
            message = (
                f"{kind} for call {call_id} is in run {run_id}, but its ToolCalled "
                f"is in run {opened.run_id}"
            )
        elif name != opened.name:
            message = (
                f"{kind} for call {call_id} names tool {name}, but its ToolCalled "
                f"names {opened.name}"
            )
        else:
            return opened
        self.problems.append(ProtocolProblem(line, seq, call_id, message))
        return opened

    def in_doubt(self) -> list[OpenCall]:
        """Calls with a ToolCalled and no terminal event, in the order they began."""
        return list(self.open_calls.values())


@attrs.frozen
class OpenRun:
    """An agent run (a RunStarted with a task) or a model request not ended (yet)."""

    line: int
    seq: int
    run_id: str
    request_id: str | None = None  # None: the run itself

    def message(self) -> str:
        if self.request_id is not None:
            return (
                f"model request {self.request_id} of run {self.run_id} is in doubt: "
                "ModelRequested without a response"
            )
        return f"agent run {self.run_id} is unfinished: no RunFinished"


class RunProtocol:
    """Agent runs end: each one with RunFinished, each model request with a response or
    the end of its run. What is still open when the log ends is in doubt, as a call is.

    A run another run resumed (`resumedFrom` names it) has ended: it was continued.
    """

    def __init__(self) -> None:
        self.runs: dict[str, OpenRun] = {}
        self.requests: dict[str, OpenRun] = {}

    def feed(self, line: int, seq: int, event: AgentRunEvent) -> None:
        """Take an agent run's event, in file order (a RunStarted without a task, a CLI
        call's run, is not an agent run)."""
        if isinstance(event, RunStarted):
            if event.task is not None:
                continues = (event.resumed_from or {}).get("runId")
                if type(continues) is str:
                    self._end(continues)
                self.runs[event.run_id] = OpenRun(line, seq, event.run_id)
        elif isinstance(event, ModelRequested):
            self.requests[event.request_id] = OpenRun(line, seq, event.run_id, event.request_id)
        elif isinstance(event, ModelResponded):
            self.requests.pop(event.request_id, None)
        else:
            self._end(event.run_id)

    def _end(self, run_id: str) -> None:
        """A run ended: it, and every request of it still unanswered."""
        self.runs.pop(run_id, None)
        for request_id in [r for r, o in self.requests.items() if o.run_id == run_id]:
            del self.requests[request_id]

    def in_doubt(self) -> list[OpenRun]:
        """The runs and requests still open, in file order."""
        return sorted([*self.runs.values(), *self.requests.values()], key=lambda o: o.line)
