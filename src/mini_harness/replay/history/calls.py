"""A recorded tool call: the one class every reader of a history uses for it.

A call is its ToolCalled and, unless it is in doubt, the terminal event that ended it,
with the approvals asked and given for it. The fold makes one per call; `CallList` holds
many of them compactly.
"""

from __future__ import annotations

import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

import msgspec
import orjson
from msgspec.structs import astuple

from mini_harness.agent import INTERRUPTED_RESULT, call_outcome
from mini_harness.events import (
    ApprovalDecided,
    ApprovalRequested,
    FileEffect,
    JsonObject,
    JsonValue,
    Message,
    ToolCall,
    ToolError,
    to_wire,
)
from mini_harness.transcripts import TranscriptRecord

SUCCEEDED = "succeeded"
FAILED = "failed"
IN_DOUBT = "in-doubt"

Approval = ApprovalRequested | ApprovalDecided


class Call(msgspec.Struct):
    """One recorded call of run `run_id` (the `run_index`-th of its file): `status` is
    succeeded (with `output` and the files it changed, `effects`), failed (with `error`)
    or in-doubt (a ToolCalled and no terminal event: it may or may not have run).

    In an agent run it carries the model's id for it (`tool_use_id`) and the `step` that
    made it; `imported` when the run was imported from another agent's session (its
    output is what that agent's model read, as text). `approvals` are the approval events
    of the call; `records` its lines as read (ToolCalled, approvals, terminal event), kept
    only when the fold keeps the detail.

    A msgspec Struct, not frozen: a fold makes one per call, and a Struct is built several
    times faster than an attrs class. Treat it as read-only. Two calls are equal when every
    field but `records` is.
    """

    run_index: int
    run_id: str
    call_id: str
    name: str
    input: JsonValue
    line: int  # of the ToolCalled
    tool_use_id: str | None = None
    step: int | None = None
    status: str = IN_DOUBT
    end_line: int | None = None
    output: JsonValue = None
    error: ToolError | None = None
    duration_ms: float | None = None
    effects: tuple[FileEffect, ...] | None = None
    imported: bool = False  # a call of a run imported from another agent's session
    approvals: tuple[Approval, ...] = ()
    records: list[TranscriptRecord] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Call) and _row(self) == _row(other)

    __hash__ = None  # type: ignore[assignment] # mutable, compared by value

    @property
    def ended(self) -> bool:
        """Whether a terminal event ended it (it is not in doubt)."""
        return self.status != IN_DOUBT

    def to_json(self) -> JsonObject:
        """The call as `replay --json` writes it."""
        out: JsonObject = {
            "callId": self.call_id,
            "run": self.run_index,
            "name": self.name,
            "status": self.status,
            "durationMs": self.duration_ms,
            "line": self.line,
            "endLine": self.end_line,
        }
        if self.error is not None:
            out["error"] = to_wire(self.error)
        return out

    def result_message(self, asked: ToolCall) -> Message:
        """The tool result the model got for `asked` (the model's call this call ran), or,
        for a call in doubt, gets when its run is continued. An imported call's is the
        text the source agent's model read, as the import put it in the run's requests."""
        if not self.ended:
            return call_outcome(asked, error=INTERRUPTED_RESULT.format(name=self.name)).message
        if self.error is not None:
            return call_outcome(asked, error=self.error.message).message
        return call_outcome(asked, output=self.output, imported=self.imported).message


def _row(call: Call) -> tuple[object, ...]:
    """Every field of a call but its records, as plain JSON-able values (CallList's row)."""
    error = call.error
    return (
        call.run_index,
        call.run_id,
        call.call_id,
        call.name,
        call.input,
        call.line,
        call.tool_use_id,
        call.step,
        call.status,
        call.end_line,
        call.output,
        None if error is None else astuple(error),
        call.duration_ms,
        None if call.effects is None else [astuple(e) for e in call.effects],
        call.imported,
        [[_APPROVALS.index(type(a)), *astuple(a)] for a in call.approvals],
    )


_APPROVALS: list[type[Approval]] = [ApprovalRequested, ApprovalDecided]


class CallList(Sequence[Call]):
    """Calls held compactly: each as one row of compact JSON in one buffer, rebuilt when
    read.

    A fold of a million events ends about half a million calls; as objects with their
    inputs and outputs they take about a kilobyte each, as rows about a fifth of that.
    Reading `calls[i]` (or iterating) gives an equal Call each time (without its records).
    """

    def __init__(self, calls: Iterable[Call] = ()) -> None:
        self._data = bytearray()
        self._ends = array.array("Q")  # where each row ends in _data
        self._run_ids: list[str] = []  # a row names its run by its place here
        self._run_places: dict[str, int] = {}
        for call in calls:
            self.append(call)

    def append(self, call: Call) -> None:
        place = self._run_places.get(call.run_id)
        if place is None:
            place = self._run_places[call.run_id] = len(self._run_ids)
            self._run_ids.append(call.run_id)
        row = list(_row(call))
        row[1] = place
        if not row[-1]:
            row.pop()  # no approvals: the common case, one field less to hold
        self._data += orjson.dumps(row)
        self._ends.append(len(self._data))

    def _call(self, index: int) -> Call:
        start = self._ends[index - 1] if index else 0
        row = orjson.loads(memoryview(self._data)[start : self._ends[index]])
        row[1] = self._run_ids[row[1]]
        if row[11] is not None:
            kind, message, path, kind_of, violations = row[11]
            row[11] = ToolError(
                kind, message, path, kind_of, None if violations is None else tuple(violations)
            )
        if row[13] is not None:
            row[13] = tuple(FileEffect(*effect) for effect in row[13])
        if len(row) > 15:
            row[15] = tuple(_APPROVALS[kind](*fields) for kind, *fields in row[15])
        return Call(*row)

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> Call: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Call]: ...

    def __getitem__(self, index: int | slice) -> Call | Sequence[Call]:
        if isinstance(index, slice):
            return [self._call(i) for i in range(*index.indices(len(self)))]
        return self._call(range(len(self))[index])

    def __iter__(self) -> Iterator[Call]:
        for index in range(len(self)):
            yield self._call(index)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment] # mutable, compared by value

    def __repr__(self) -> str:
        return f"<CallList(calls={len(self)})>"
