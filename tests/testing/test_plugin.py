"""The golden plugin as a user meets it: a project whose tests only use the `golden` fixture.

Each test builds a small project with pytester and runs pytest on it in-process; the
plugin is found through its `pytest11` entry point, as after `pip install mini-harness`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_harness.transcripts import TranscriptReader

USER_TESTS = """
from pathlib import Path

from mini_harness import ToolRegistry


def make_registry():
    greeting = Path(__file__).with_name("greeting.txt").read_text()
    registry = ToolRegistry()
    registry.add(
        "greet",
        lambda data: {"greeting": f"{greeting}, {data['name']}"},
        description="Greets someone.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
    )
    return registry


def test_greet(golden):
    golden.runtime(make_registry()).dispatch("greet", {"name": "Ada"})
    golden.check_transcript()


def test_other(golden):
    golden.runtime(make_registry()).attempt("greet", {"name": 1})
    golden.check_transcript()
"""

GOLDEN = Path("goldens/test_tool/test_greet.jsonl")
OTHER = Path("goldens/test_tool/test_other.jsonl")
OBTAINED = Path("goldens/test_tool/test_greet.jsonl.obtained")
SUCCEEDED = (
    '{"type":"ToolSucceeded","seq":3,"ts":"2000-01-01T00:00:00.000000Z","prev":"…",'
    '"runId":"run-1","callId":"call-1","name":"greet","output":{"greeting":"%s, Ada"},'
    '"durationMs":0}'
)


@pytest.fixture(name="project")
def _project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A user's project with one tool and two golden tests, outside CI."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_tool=USER_TESTS)
    greet(pytester, "hello")
    return pytester


def greet(pytester: pytest.Pytester, greeting: str) -> None:
    (pytester.path / "greeting.txt").write_text(greeting)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest in the project; hypothesis' plugin only slows these runs down."""
    return pytester.runpytest("-p", "no:hypothesispytest", *args)


def accepted(pytester: pytest.Pytester) -> str:
    """Create the goldens and return the first one's text."""
    run(pytester, "--update-goldens").assert_outcomes(passed=2)
    return (pytester.path / GOLDEN).read_text()


class TestMissingGolden:
    def test_missing_golden_fails(self, project: pytest.Pytester) -> None:
        """Without the flag a missing golden fails, names the file and is not created."""
        result = run(project, "-k", "test_greet")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                f"golden file {GOLDEN} is missing; this run's output is in {OBTAINED}.",
                "Run `pytest --update-goldens` to create it.",
            ]
        )
        assert not (project.path / GOLDEN).exists()
        assert (project.path / OBTAINED).exists()

    def test_update_creates_then_passes(self, project: pytest.Pytester) -> None:
        """--update-goldens writes the goldens, says so, and the next plain run passes."""
        result = run(project, "--update-goldens")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(["*mini-harness goldens*", f"created: {GOLDEN}"])
        assert not (project.path / OBTAINED).exists()
        run(project).assert_outcomes(passed=2)

    def test_golden_is_a_valid_transcript(self, project: pytest.Pytester) -> None:
        """The golden the plugin writes reads as a transcript with an intact chain."""
        accepted(project)
        reader = TranscriptReader(project.path / GOLDEN)
        assert [type(r.event).__name__ for r in reader] == [
            "TranscriptStarted",
            "RunStarted",
            "ToolCalled",
            "ToolSucceeded",
        ]
        assert reader.problems == []


class TestMismatch:
    def test_changed_output_fails_with_diff(self, project: pytest.Pytester) -> None:
        """A changed tool output fails with a unified diff and leaves the output in .obtained."""
        before = accepted(project)
        greet(project, "good day")
        result = run(project)
        result.assert_outcomes(failed=1, passed=1)
        lines = result.stdout.lines
        header = f"output differs from golden file {GOLDEN} (- golden, + obtained):"
        start = lines.index(header)
        assert lines[start + 1 : start + 5] == [
            "  (prev hashes are shown as … in this diff)",
            "--- golden",
            "+++ obtained",
            "@@ -1,4 +1,4 @@",
        ]
        assert "-" + SUCCEEDED % "hello" in lines
        assert "+" + SUCCEEDED % "good day" in lines
        assert lines[lines.index(f"The whole output is in {OBTAINED}.") + 1] == (
            "If the change is intended, run `pytest --update-goldens` to accept it."
        )
        assert (project.path / GOLDEN).read_text() == before
        obtained = (project.path / OBTAINED).read_text()
        assert '"greeting":"good day, Ada"' in obtained
        run(project, "--update-goldens").assert_outcomes(passed=2)
        assert (project.path / GOLDEN).read_text() == obtained

    def test_update_rewrites_and_removes_obtained(self, project: pytest.Pytester) -> None:
        """--update-goldens accepts the change, reports it and removes the .obtained file."""
        accepted(project)
        greet(project, "good day")
        run(project)
        result = run(project, "--update-goldens")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines([f"updated: {GOLDEN}"])
        assert "good day, Ada" in (project.path / GOLDEN).read_text()
        assert not (project.path / OBTAINED).exists()

    def test_passing_run_removes_stale_obtained(self, project: pytest.Pytester) -> None:
        """When the output is back to the golden, the leftover .obtained file is removed."""
        accepted(project)
        greet(project, "good day")
        run(project).assert_outcomes(failed=1, passed=1)
        assert (project.path / OBTAINED).exists()
        greet(project, "hello")
        run(project).assert_outcomes(passed=2)
        assert not (project.path / OBTAINED).exists()

    def test_only_touched_goldens_are_rewritten(self, project: pytest.Pytester) -> None:
        """--update-goldens rewrites only the goldens of the tests that ran."""
        accepted(project)
        other_before = (project.path / OTHER).read_bytes()
        (project.path / OTHER).write_text("stale\n")
        greet(project, "good day")
        run(project, "--update-goldens", "-k", "test_greet").assert_outcomes(passed=1)
        assert "good day, Ada" in (project.path / GOLDEN).read_text()
        assert (project.path / OTHER).read_text() == "stale\n"
        assert other_before != b"stale\n"

    def test_hand_edited_chain(self, project: pytest.Pytester) -> None:
        """A golden whose content matches but whose prev chain was edited says so."""
        text = accepted(project)
        (project.path / GOLDEN).write_text(text.replace('"prev":"', '"prev":"0', 1))
        result = run(project, "-k", "test_greet")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*only the prev hashes differ: the golden was edited by hand*"]
        )


class TestCI:
    def test_ci_never_creates(
        self, project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With CI set, --update-goldens is ignored: a missing golden fails and is not written."""
        monkeypatch.setenv("CI", "true")
        result = run(project, "--update-goldens", "-k", "test_greet")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "mini-harness: --update-goldens is ignored because CI is set",
                "*",
                "CI is set, so goldens are never written here (--update-goldens was ignored): "
                "run `pytest --update-goldens` locally and commit the goldens.",
            ],
            consecutive=False,
        )
        assert not (project.path / GOLDEN).exists()

    def test_ci_never_rewrites(
        self, project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With CI set, a changed output fails and the golden keeps its content."""
        before = accepted(project)
        greet(project, "good day")
        monkeypatch.setenv("CI", "1")
        run(project, "--update-goldens").assert_outcomes(failed=1, passed=1)
        assert (project.path / GOLDEN).read_text() == before

    @pytest.mark.parametrize("value", ["", "0", "false", "No"])
    def test_ci_off_values(
        self, project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
    ) -> None:
        """CI set to an empty or false-like value does not count as CI."""
        monkeypatch.setenv("CI", value)
        run(project, "--update-goldens").assert_outcomes(passed=2)
        assert (project.path / GOLDEN).exists()
