"""The `view` page in a real browser: it loads cleanly, shows the calls, filters and
searches, keeps hostile text inert, and opens 100,000 calls in a few seconds."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from mini_harness.cli import cli
from tests.replay.generate import write_transcript
from tests.replay.timeline_fixtures import (
    agent_events,
    record_agent_run,
    record_reads,
    record_undo,
    tool_events,
    write,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip(
    "playwright.sync_api", reason="playwright is missing: pip install -e '.[browser]'"
).expect

LARGE_CALLS = 100_000
OPEN_SECONDS = 5.0  # "a few seconds", on a busy two-core machine


def make_page(transcript: Path) -> Path:
    """The page of `transcript`: written, with exit 0, or 1 when the log has something in
    doubt (the fixtures' tool run leaves a call in doubt)."""
    html = transcript.with_suffix(".html")
    result = CliRunner().invoke(cli, ["view", str(transcript), "-o", str(html)])
    assert result.exit_code in {0, 1}, result.output
    assert result.exit_code == 0 or "in doubt" in result.stderr, result.output
    return html


class Opened:
    """A page and everything it said on the console."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def open(self, html: Path) -> float:
        """Load the page from disk; seconds until it has drawn its first rows."""
        started = time.monotonic()
        self.page.goto(html.as_uri())
        self.page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        return time.monotonic() - started

    def calls(self) -> list[str]:
        rows = self.page.locator(".row.call")
        return [str(rows.nth(i).get_attribute("data-call")) for i in range(rows.count())]


@pytest.fixture(name="opened")
def _opened(browser: Browser) -> Iterator[Opened]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield Opened(context.new_page())
    finally:
        context.close()


@pytest.fixture(name="sample")
def _sample(tmp_path: Path) -> Path:
    return make_page(write(tmp_path / "t.jsonl", agent_events() + tool_events()))


class TestPage:
    def test_loads_without_console_errors(self, opened: Opened, sample: Path) -> None:
        """The page loads from disk with nothing on the console and shows every call."""
        opened.open(sample)
        assert opened.errors == []
        assert opened.calls() == ["c1", "c2", "c3", "e1", "e2", "e3"]
        assert "Chain intact" in opened.page.locator("#verify").inner_text()

    def test_nothing_is_fetched(self, opened: Opened, sample: Path) -> None:
        """Opening the page asks for nothing but the file itself."""
        requested: list[str] = []
        opened.page.on("request", lambda request: requested.append(request.url))
        opened.open(sample)
        assert requested == [sample.as_uri()]

    def test_screenshot(self, opened: Opened, sample: Path, artifacts: Path) -> None:
        """A screenshot of the page is kept as a test artefact."""
        opened.open(sample)
        shot = artifacts / "view.png"
        opened.page.screenshot(path=str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class TestFilters:
    def test_status(self, opened: Opened, sample: Path) -> None:
        """The status filter leaves only the calls that ended so."""
        opened.open(sample)
        opened.page.select_option("#status", "failed")
        assert opened.calls() == ["c3", "e2"]
        opened.page.select_option("#status", "in-doubt")
        assert opened.calls() == ["e3"]

    def test_tool_and_run(self, opened: Opened, sample: Path) -> None:
        """The tool and run filters narrow to that tool's calls, that run's rows."""
        opened.open(sample)
        opened.page.select_option("#tool", "echo")
        assert opened.calls() == ["e1", "e2", "e3"]
        opened.page.select_option("#tool", "")
        opened.page.select_option("#run", "2")
        assert opened.calls() == ["e1", "e2", "e3"]
        assert opened.page.locator(".row.run").count() == 1

    def test_step(self, opened: Opened, sample: Path) -> None:
        """The step filter shows that step's rows only."""
        opened.open(sample)
        opened.page.fill("#step", "4")
        expect(opened.page.locator(".row.call")).to_have_count(0)
        assert opened.page.locator(".row.step").all_inner_texts()[0].startswith("▾\nStep 4")

    def test_search(self, opened: Opened, sample: Path) -> None:
        """Search finds text in inputs and outputs, ignoring case."""
        opened.open(sample)
        opened.page.fill("#search", "WINDOW.PWNED")
        expect(opened.page.locator(".row.call")).to_have_count(1)
        assert opened.calls() == ["c2"]
        opened.page.fill("#search", "no such text anywhere")
        opened.page.wait_for_selector(".empty")
        assert opened.calls() == []

    def test_keyboard(self, opened: Opened, sample: Path) -> None:
        """A call opens with Enter on its line, which keeps the focus."""
        opened.open(sample)
        line = opened.page.locator(".row.call[data-call='e2'] .line")
        line.focus()
        opened.page.keyboard.press("Enter")
        assert "Invalid input for echo.text" in opened.page.locator("pre.error").inner_text()
        assert opened.page.evaluate("document.activeElement.closest('.row').dataset.call") == "e2"

    def test_event_of_no_run(self, opened: Opened, tmp_path: Path) -> None:
        """An event that names no run is shown unfiltered, and hidden by a filter."""
        events = [*tool_events(), {"type": "Note", "text": "a later kind of event"}]
        opened.open(make_page(write(tmp_path / "t.jsonl", events)))
        assert opened.page.locator(".row.event").all_inner_texts() == [
            'Note\nseq 7\n{"text":"a later kind of event"}'
        ]
        opened.page.select_option("#status", "failed")
        assert opened.page.locator(".row.event").count() == 0
        assert opened.calls() == ["e2"]

    def test_collapse_a_run(self, opened: Opened, sample: Path) -> None:
        """Clicking a run's header hides its rows; clicking again shows them."""
        opened.open(sample)
        header = opened.page.locator(".row.run .line").nth(1)
        header.click()
        assert opened.calls() == ["c1", "c2", "c3"]
        header.click()
        assert len(opened.calls()) == 6


class TestRows:
    def test_rows_that_open_say_whether_they_are(self, opened: Opened, sample: Path) -> None:
        """Every line that opens on click carries aria-expanded, which follows it."""
        opened.open(sample)
        call = opened.page.locator(".row.call[data-call='e1'] .line")
        assert call.get_attribute("aria-expanded") == "false"
        call.click()
        call = opened.page.locator(".row.call[data-call='e1'] .line")
        assert call.get_attribute("aria-expanded") == "true"
        run = opened.page.locator(".row.run .line").nth(1)
        assert run.get_attribute("aria-expanded") == "true"
        run.click()
        assert opened.page.locator(".row.run .line").nth(1).get_attribute("aria-expanded") == (
            "false"
        )
        without = opened.page.locator("[role=button]:not([aria-expanded])")
        assert without.count() == 0

    def test_a_failed_row_shows_its_input(self, opened: Opened, sample: Path) -> None:
        """A failed call's line shows what it was given beside its error."""
        opened.open(sample)
        line = opened.page.locator(".row.call[data-call='e2'] .line").inner_text()
        assert '{"text":3}' in line
        assert "Invalid input for echo.text" in line

    def test_a_collapsed_row_keeps_its_whitespace(self, opened: Opened, tmp_path: Path) -> None:
        """A row's one-line preview shows the spaces of an input and the indentation of
        the model's text as they are, and each line break as ⏎."""
        events = agent_events()
        reply = next(event for event in events if event["type"] == "ModelResponded")
        reply["message"]["content"] = "Plan:\n    1. read it\n\n    2. patch   it"
        tools = tool_events()
        tools[1]["input"] = {"text": "def f():\n    return  1"}
        opened.open(make_page(write(tmp_path / "t.jsonl", events + tools)))
        turn = opened.page.locator(".row.turn .line .grow").first.inner_text()
        assert turn == "Plan:⏎    1. read it⏎⏎    2. patch   it"
        call = opened.page.locator(".row.call[data-call='e1'] .line .grow").inner_text()
        assert call.startswith('{"text":"def f():\\n    return  1"} → ')

    def test_a_nested_runs_finish_is_indented_with_it(self, opened: Opened, tmp_path: Path) -> None:
        """The finished: line of a run that continues another sits under that run, as
        indented as its header."""
        transcript = record_agent_run(tmp_path)
        result = CliRunner().invoke(
            cli, ["resume", str(transcript), "--model", "mock", "more please"]
        )
        assert result.exit_code == 0, result.output
        opened.open(make_page(transcript))
        headers = opened.page.locator(".row.run")
        finishes = opened.page.locator(".row.finish")
        assert headers.count() == finishes.count() == 2
        for index in range(2):
            header = headers.nth(index).evaluate("node => node.style.marginLeft")
            finish = finishes.nth(index).evaluate("node => node.style.marginLeft")
            assert header == finish
        assert finishes.nth(1).evaluate("node => node.style.marginLeft") != "0px"


class TestUndo:
    def test_an_undo_run_links_to_the_call_it_reverts(self, opened: Opened, tmp_path: Path) -> None:
        """An undo run says which call of which run it reverts and links to it: the link
        shows that call opened, though a filter and a collapsed run hid it; the call says
        which run undid it."""
        log, call_id = record_undo(tmp_path)
        opened.open(make_page(log))
        first = opened.page.locator(".row.run .mono").first.inner_text()
        undoes = opened.page.locator(".row.run .undoes")
        assert undoes.inner_text() == f"undo of call {call_id} in run {first}"
        undone = opened.page.locator(f".row.call[data-call='{call_id}'] .undone")
        assert undone.inner_text() == "undone by run 2"
        opened.page.locator(".row.run .line").first.click()  # run 1 collapsed
        opened.page.select_option("#run", "2")
        assert call_id not in opened.calls()
        undoes.locator("button").click()
        assert call_id in opened.calls()
        assert opened.page.locator("#run").input_value() == ""
        line = opened.page.locator(f".row.call[data-call='{call_id}'] .line")
        assert line.get_attribute("aria-expanded") == "true"
        assert (
            "+b = 3"
            in opened.page.locator(f".row.call[data-call='{call_id}'] pre.input").inner_text()
        )
        focused = opened.page.evaluate("document.activeElement.closest('.row').dataset.call")
        assert focused == call_id
        assert opened.errors == []


class TestHostileText:
    def test_output_with_markup_is_inert(self, opened: Opened, sample: Path) -> None:
        """A tool output holding a script and an img with onerror is shown as text, and
        neither runs, even with the call's details open."""
        opened.open(sample)
        opened.page.locator(".row.call[data-call='c2'] .line").click()
        output = opened.page.locator(".row.call[data-call='c2'] pre.output").inner_text()
        assert '<script>window.pwned=1</script><img src=x onerror=\\"window.pwned=1\\">' in output
        opened.page.wait_for_timeout(200)  # an img's onerror would have fired by now
        assert opened.page.evaluate("typeof window.pwned") == "undefined"
        assert opened.page.locator("main script, main img").count() == 0
        assert opened.errors == []

    def test_text_that_ends_the_data_block(self, opened: Opened, tmp_path: Path) -> None:
        """A value holding `</script>` and line separators cannot end the data block."""
        events = [
            *tool_events()[:2],
            {
                "type": "ToolSucceeded",
                "runId": tool_events()[0]["runId"],
                "callId": "e1",
                "name": "echo",
                "output": {"text": "</script><script>window.pwned=2</script>\u2028\u2029&amp;"},
                "durationMs": 1.0,
            },
        ]
        html = make_page(write(tmp_path / "t.jsonl", events))
        opened.open(html)
        assert opened.calls() == ["e1"]
        assert opened.page.evaluate("typeof window.pwned") == "undefined"
        assert opened.errors == []


class TestAgentRun:
    def test_context_bars(self, opened: Opened, tmp_path: Path) -> None:
        """Each step of a recorded agent run has a bar of its context by part, and the
        bars grow as tool results join the conversation."""
        opened.open(make_page(record_agent_run(tmp_path)))
        assert opened.errors == []
        steps = opened.page.locator(".row.step")
        assert steps.count() == 3
        totals = opened.page.locator(".context-total").all_inner_texts()
        numbers = [int(text.strip("~ tokens").replace(",", "")) for text in totals]
        assert numbers == sorted(numbers)
        assert numbers[0] < numbers[2]
        opened.page.check("#context-fixed")
        parts = steps.nth(2).locator(".bar .part")
        labels = [parts.nth(i).get_attribute("data-part") for i in range(parts.count())]
        assert labels == ["System prompt", "Tool definitions", "Conversation", "Tool results"]
        assert "agent run" in opened.page.locator(".row.run").inner_text()
        assert len(opened.calls()) == 2

    def test_the_bars_show_what_grows(self, opened: Opened, tmp_path: Path) -> None:
        """What every request repeats (here the tool definitions, most of each request) is
        said once on the run and left out of the bars, so the largest step's conversation
        and tool results fill its bar; a checkbox puts them back, on the full scale."""
        opened.open(make_page(record_agent_run(tmp_path)))
        steps = opened.page.locator(".row.step")

        def filled(step: int) -> dict[str, float]:
            """Each part of a step's bar: the share of the bar it covers."""
            bar = steps.nth(step).locator(".bar")
            width = bar.bounding_box()["width"]  # type: ignore[index]
            parts = bar.locator(".part")
            return {
                str(parts.nth(i).get_attribute("data-part")): (
                    parts.nth(i).bounding_box()["width"] / width  # type: ignore[index]
                )
                for i in range(parts.count())
            }

        last = filled(2)
        assert list(last) == ["Conversation", "Tool results"]
        assert sum(last.values()) > 0.95
        fixed = opened.page.locator(".row.run .context-fixed").inner_text()
        said = re.fullmatch(
            r"every request repeats ~([\d,]+) tokens: System prompt ~([\d,]+), "
            r"Tool definitions ~([\d,]+) \(not in the step bars\)",
            fixed,
        )
        assert said is not None, fixed
        repeated, prompt, definitions = (int(n.replace(",", "")) for n in said.groups())
        assert repeated == prompt + definitions
        total = opened.page.locator(".context-total").nth(2).inner_text()
        assert definitions > int(total.strip("~ tokens").replace(",", "")) / 2
        opened.page.check("#context-fixed")
        full = filled(2)
        assert list(full) == ["System prompt", "Tool definitions", "Conversation", "Tool results"]
        assert full["Tool definitions"] > 0.5
        assert sum(full.values()) > 0.95
        assert opened.errors == []


class TestRerun:
    def test_diverged_call_shows_its_diff(
        self, opened: Opened, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With --rerun, the status filter finds the diverged call and its diff shows."""
        monkeypatch.chdir(tmp_path)
        log = record_reads(tmp_path)
        (tmp_path / "a.txt").write_text("changed\n")
        html = tmp_path / "page.html"
        result = CliRunner().invoke(cli, ["view", str(log), "--rerun", "-o", str(html)])
        assert result.exit_code == 1
        opened.open(html)
        assert "Re-run: 1 matched, 1 diverged" in opened.page.locator("#verify").inner_text()
        opened.page.select_option("#status", "diverged")
        assert len(opened.calls()) == 1
        opened.page.locator(".row.call .line").first.click()
        diff = opened.page.locator("pre.diff").inner_text()
        assert '+  "text": "changed\\n",' in diff.splitlines()
        assert opened.errors == []


@pytest.fixture(name="large", scope="module")
def _large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    transcript = tmp_path_factory.mktemp("large") / "large.jsonl"
    write_transcript(transcript, 2 * LARGE_CALLS + 3, runs=1)
    return make_page(transcript)


class TestLarge:
    def test_hundred_thousand_calls_open_in_seconds(
        self, opened: Opened, large: Path, artifacts: Path
    ) -> None:
        """A page of 100,000 calls opens, filters and pages in a few seconds."""
        seconds = opened.open(large)
        (artifacts / "view-large-open.txt").write_text(
            f"{LARGE_CALLS} calls: page open in {seconds:.2f} s\n"
        )
        print(f"\n{LARGE_CALLS:,} calls: page open in {seconds:.2f} s")
        assert seconds < OPEN_SECONDS
        info = opened.page.locator("#pager-info").inner_text()
        assert info == f"rows 1-200 of {LARGE_CALLS + 1:,}"
        started = time.monotonic()
        opened.page.select_option("#status", "failed")
        assert opened.page.locator("#pager-info").inner_text() == f"rows 1-200 of {10_001:,}"
        assert time.monotonic() - started < OPEN_SECONDS
        opened.page.click("#next")
        assert opened.page.locator("#pager-info").inner_text() == f"rows 201-400 of {10_001:,}"
        assert opened.errors == []
