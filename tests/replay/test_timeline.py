"""The timeline (a history read with its detail): runs, steps, turns, calls, approvals
and problems, and its filters."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
import pytest

from mini_harness.errors import ReplayError, TranscriptFormatError
from mini_harness.events import FileEffect, JsonObject, RunOrigin, ToolError, Usage
from mini_harness.replay.history import Call, History, Step, read_history
from mini_harness.replay.views import describe
from mini_harness.replay.views.filters import Selection, select, selected_events
from mini_harness.transcripts import TranscriptRecord
from tests.replay.timeline_fixtures import (
    AGENT,
    TOOLS,
    TS,
    agent_events,
    chained,
    tool_events,
    write,
)


def build(events: list[JsonObject]) -> History:
    """The timeline of these events, written as a transcript and read back."""
    with tempfile.TemporaryDirectory() as directory:
        return read_history(write(Path(directory) / "t.jsonl", events), detail=True, damage=True)


def names(records: list[TranscriptRecord]) -> list[str]:
    return [describe.event_name(record) for record in records]


@pytest.fixture(name="timeline")
def _timeline() -> History:
    return build(agent_events() + tool_events())


class TestAgentRun:
    def test_steps_hold_turn_and_calls(self, timeline: History) -> None:
        """Each step has its model turn and the calls it made, in order."""
        run = timeline.roots[0]
        assert [step.number for step in run.steps] == [1, 2, 3, 4]
        assert [[call.name for call in step.calls] for step in run.steps] == [
            ["list_files"],
            ["read_file"],
            ["apply_patch"],
            [],
        ]
        assert run.steps[0].requested is not None
        assert run.steps[0].text == "Let me look at the files."
        assert [c.name for c in run.steps[0].tool_calls] == ["list_files"]

    def test_failed_attempt_then_response(self, timeline: History) -> None:
        """A retried request keeps its failed attempt beside the response that came after."""
        step = timeline.roots[0].steps[2]
        assert step.status == "succeeded"
        assert [f.error.kind for f in step.failures] == ["rate_limited"]

    def test_approvals_belong_to_their_call(self, timeline: History) -> None:
        """Approval events attach to the call they decide, with who decided."""
        read, patch = (timeline.roots[0].steps[i].calls[0] for i in (1, 2))
        assert [(type(e).__name__, getattr(e, "by", None)) for e in read.approvals] == [
            ("ApprovalRequested", None),
            ("ApprovalDecided", "user"),
        ]
        assert patch.status == "failed"
        assert getattr(patch.approvals[0], "decision", None) == "denied"

    def test_trim_and_unknown_event_are_kept(self, timeline: History) -> None:
        """A ContextTrimmed goes to its step; an event of an unknown type stays in the run."""
        run = timeline.roots[0]
        assert names(run.steps[2].others) == ["ContextTrimmed"]
        records = [item for item in run.items or () if isinstance(item, TranscriptRecord)]
        assert names(records) == ["Checkpoint"]

    def test_finish_and_usage(self, timeline: History) -> None:
        """RunFinished ends the run; its usage totals are the run's."""
        run = timeline.roots[0]
        assert run.finished is not None
        assert run.finished.stop_reason == "final"
        usage = describe.run_usage(run)
        assert usage is not None
        assert usage.input_tokens == 1000

    @pytest.mark.parametrize(
        ("model", "shown"),
        [
            (
                {"provider": "openai-compatible", "name": "gpt-4o-mini"},
                "openai-compatible gpt-4o-mini",
            ),
            ({"provider": "script:demo.json", "name": "demo.json"}, "script:demo.json"),
            ({"provider": "mock", "name": ""}, "mock"),
        ],
    )
    def test_model_name(self, model: JsonObject, shown: str) -> None:
        """The model reads `provider name`, without saying the name twice."""
        events = agent_events()[:1]
        events[0] = {**events[0], "model": model}
        assert describe.model_name(build(events).roots[0]) == shown

    def test_usage_summed_without_run_finished(self) -> None:
        """An unfinished run's usage is the sum of its turns' usage."""
        events = [e for e in agent_events() if e["type"] != "RunFinished"]
        run = build(events).roots[0]
        assert run.finished is None
        assert describe.run_usage(run) == Usage(1000, 40, None)


class TestToolRun:
    def test_calls_without_steps(self, timeline: History) -> None:
        """A tool run's calls sit in the run itself, each with its status."""
        run = timeline.roots[1]
        assert run.run_id == TOOLS
        calls = [item for item in run.items or () if isinstance(item, Call)]
        assert [(c.call_id, c.status) for c in calls] == [
            ("e1", "succeeded"),
            ("e2", "failed"),
            ("e3", "in-doubt"),
        ]
        assert calls[1].error == ToolError(
            "invalid_input", "Invalid input for echo.text: expected string"
        )

    def test_a_run_lasts_to_its_last_event(self) -> None:
        """A run without RunFinished lasts from its RunStarted to its last event: here the
        end of its last call."""
        start, called, ended = tool_events()[:3]
        events = [{**start, "ts": TS.format(1)}, called, {**ended, "ts": TS.format(4)}]
        assert describe.run_ms(build(events).roots[0]) == 3000.0

    def test_protocol_problems(self) -> None:
        """A terminal event with no ToolCalled is a protocol problem, and is still shown."""
        events = [
            *tool_events()[:1],
            {
                "type": "ToolSucceeded",
                "runId": TOOLS,
                "callId": "zz",
                "name": "echo",
                "output": 1,
                "durationMs": 1.0,
            },
        ]
        timeline = build(events)
        assert [p.kind for p in timeline.problems] == ["protocol"]
        assert "which has no ToolCalled" in timeline.problems[0].message
        items = timeline.roots[0].items
        assert items is not None
        (shown,) = items
        assert isinstance(shown, TranscriptRecord)
        assert getattr(shown.event, "call_id", None) == "zz"

    def test_run_started_twice(self) -> None:
        """A second RunStarted for a run is a protocol problem, shown in the run."""
        events = [tool_events()[0], tool_events()[0]]
        timeline = build(events)
        assert [p.message for p in timeline.problems] == [f"run {TOOLS} is started again"]
        assert names(timeline.roots[0].items or []) == ["RunStarted"]  # type: ignore[arg-type]

    def test_event_before_run_started(self) -> None:
        """A run's event before its RunStarted is a problem; the RunStarted still heads it."""
        events = [tool_events()[1], tool_events()[0], tool_events()[2]]
        timeline = build(events)
        assert [p.message for p in timeline.problems] == [
            f"ToolCalled for run {TOOLS}, with no RunStarted"
        ]
        run = timeline.roots[0]
        assert run.started is not None
        assert run.started.harness == "0.1.0"
        assert [c.status for c in run.calls] == ["succeeded"]


class TestRunTree:
    def test_resumed_and_forked_runs_are_children(self) -> None:
        """A run naming resumedFrom or forkedFrom sits under the run it names."""
        child = {
            "type": "RunStarted",
            "runId": "c" * 32,
            "harness": "0.1.0",
            "tools": [],
            "resumedFrom": {"runId": AGENT, "step": 4},
        }
        fork = {
            "type": "RunStarted",
            "runId": "d" * 32,
            "harness": "0.1.0",
            "tools": [],
            "forkedFrom": {"runId": "c" * 32, "step": 1},
        }
        timeline = build([*agent_events(), child, fork, *tool_events()])
        assert [run.run_id for run in timeline.roots] == [AGENT, TOOLS]
        walked = [(run.run_id[0], depth) for run, depth in timeline.walk()]
        assert walked == [("a", 0), ("c", 1), ("d", 2), ("b", 0)]
        assert timeline.roots[0].children[0].origin == ("resumed", RunOrigin(AGENT, 4))

    def test_unknown_parent_is_a_root(self) -> None:
        """A run whose origin is not in the file is shown as a root."""
        orphan = {
            "type": "RunStarted",
            "runId": "c" * 32,
            "harness": "0.1.0",
            "tools": [],
            "forkedFrom": {"runId": "9" * 32, "step": 2},
        }
        timeline = build([orphan])
        assert [run.origin for run in timeline.roots] == [("forked", RunOrigin("9" * 32, 2))]


class TestReading:
    def test_file_and_head(self, tmp_path: Path) -> None:
        """Reading a file gives the same runs, the head hash and an intact chain."""
        path = write(tmp_path / "t.jsonl", tool_events())
        timeline = read_history(path, detail=True, damage=True)
        assert timeline.chain_intact
        assert timeline.head_hash is not None
        assert timeline.events == 7
        assert [c.status for c in timeline.roots[0].calls] == ["succeeded", "failed", "in-doubt"]

    def test_typed_events_read_from_a_file(self, tmp_path: Path) -> None:
        """Events read from a file keep their arrays: effects, a trim's replaced messages,
        the tool calls a model asked for."""
        effects = [{"path": "a.py", "before": "0" * 64, "after": "1" * 64}]
        ended = {**tool_events()[2], "effects": effects}
        events = [*agent_events(), *tool_events()[:2], ended]
        timeline = read_history(write(tmp_path / "t.jsonl", events), detail=True, damage=True)
        agent, tools = timeline.roots
        assert [call.effects for call in tools.calls] == [(FileEffect("a.py", "0" * 64, "1" * 64),)]
        trims = [record.event for record in agent.steps[2].others]
        assert [len(getattr(trim, "replaced", ())) for trim in trims] == [1]
        assert describe.trim(trims[0]).startswith(  # type: ignore[arg-type]
            "context trimmed: 1 tool result(s) replaced"
        )
        assert [[c.name for c in s.tool_calls] for s in agent.steps] == [
            ["list_files"],
            ["read_file"],
            ["apply_patch"],
            [],
        ]

    def test_damage_shows_what_came_before(self, tmp_path: Path) -> None:
        """A damaged line in the middle ends the reading; the events before it are kept."""
        lines = chained(tool_events()).splitlines(keepends=True)
        lines[3] = b"{not json\n"
        path = tmp_path / "t.jsonl"
        path.write_bytes(b"".join(lines))
        timeline = read_history(path, detail=True, damage=True)
        assert not timeline.chain_intact
        assert [(p.kind, p.line) for p in timeline.problems] == [("damage", 4)]
        assert [c.call_id for c in timeline.roots[0].calls] == ["e1"]

    def test_torn_tail(self, tmp_path: Path) -> None:
        """A torn last line is a problem; everything before it is shown."""
        path = tmp_path / "t.jsonl"
        path.write_bytes(chained(tool_events()) + b'{"type":"ToolSucc')
        timeline = read_history(path, detail=True, damage=True)
        assert [p.kind for p in timeline.problems] == ["torn-tail"]
        assert len(timeline.roots[0].calls) == 3

    def test_broken_chain(self, tmp_path: Path) -> None:
        """A line whose prev does not match is an integrity problem."""
        lines = chained(tool_events()).splitlines(keepends=True)
        edited = orjson.loads(lines[2])
        edited["input"] = {"text": "edited"}
        lines[2] = orjson.dumps(edited) + b"\n"
        path = tmp_path / "t.jsonl"
        path.write_bytes(b"".join(lines))
        timeline = read_history(path, detail=True, damage=True)
        assert [(p.kind, p.line) for p in timeline.problems] == [("integrity", 4)]
        assert not timeline.chain_intact

    def test_not_a_transcript(self, tmp_path: Path) -> None:
        """A file that is not a transcript is refused, not shown."""
        path = tmp_path / "x.jsonl"
        path.write_text('{"hello": 1}\n')
        with pytest.raises(TranscriptFormatError):
            read_history(path, detail=True, damage=True)


class TestSelection:
    def test_nothing_selected_is_everything(self, timeline: History) -> None:
        """No filter: the timeline as read."""
        assert select(timeline, Selection()) is timeline

    @pytest.mark.parametrize(("wanted", "run_id"), [("2", TOOLS), ("aaaa", AGENT)])
    def test_run_by_index_or_prefix(self, timeline: History, wanted: str, run_id: str) -> None:
        """--run takes a 1-based index or a run id prefix."""
        assert [run.run_id for run in select(timeline, Selection(run=wanted)).roots] == [run_id]

    def test_unknown_run(self, timeline: History) -> None:
        """A run that is not there is an error naming the runs that are."""
        with pytest.raises(ReplayError, match=r"has no run 7 \(it has 2 runs: 1 a+, 2 b+\)"):
            select(timeline, Selection(run="7"))

    def test_step(self, timeline: History) -> None:
        """--step keeps that step of agent runs and drops runs without it."""
        shown = select(timeline, Selection(step=2))
        assert [run.run_id for run in shown.roots] == [AGENT]
        assert [item.number for item in shown.roots[0].items or () if isinstance(item, Step)] == [2]

    def test_tool_and_status(self, timeline: History) -> None:
        """--tool and --status together keep the calls matching both, and no model turn."""
        shown = select(timeline, Selection(tools=("echo",), status="failed"))
        calls = [call for run, _ in shown.walk() for call in run.calls]
        assert [call.call_id for call in calls] == ["e2"]
        assert all(
            step.requested is None for run, _ in shown.walk() for step in describe.steps(run)
        )

    def test_status_covers_model_turns(self) -> None:
        """--status failed also keeps a model turn that failed for good."""
        events = agent_events()[:3]
        events.append(
            {
                "type": "ModelRequested",
                "runId": AGENT,
                "step": 2,
                "requestId": "r2",
                "messages": [],
                "params": {},
                "requestHash": "0" * 64,
            }
        )
        events.append(
            {
                "type": "ModelFailed",
                "runId": AGENT,
                "requestId": "r2",
                "error": {"kind": "timeout", "status": None, "message": "too slow"},
                "attempt": 3,
                "durationMs": 1.0,
            }
        )
        shown = select(build(events), Selection(status="failed"))
        assert [step.number for step in shown.roots[0].steps] == [2]

    def test_grep_ignores_case_in_inputs_outputs_and_text(self, timeline: History) -> None:
        """--grep finds text in inputs, outputs, errors and model text, ignoring case."""

        def found(text: str) -> list[str]:
            shown = select(timeline, Selection(grep=text))
            calls = [c.name for run, _ in shown.walk() for c in run.calls]
            turns = [s.number for run, _ in shown.walk() for s in run.steps]
            return calls + [f"turn {n}" for n in turns]

        assert found("WINDOW.PWNED") == ["read_file"]
        assert found("expected string") == ["echo"]
        assert found("tiny project") == ["turn 4"]
        assert found("never ended") == ["echo"]
        assert found("no such text") == []

    def test_selected_events(self, timeline: History) -> None:
        """The selected events are those of the kept items, in file order; without a
        filter, every event including the header."""
        selection = Selection(tools=("read_file",))
        events = selected_events(select(timeline, selection), selection)
        assert [e["type"] for e in events] == [
            "ToolCalled",
            "ApprovalRequested",
            "ApprovalDecided",
            "ToolSucceeded",
        ]
        everything = selected_events(timeline, Selection())
        assert [e["seq"] for e in everything] == list(range(timeline.events))
