from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness import ToolCallError, ToolRuntime
from mini_harness.cli import cli
from mini_harness.cli.corpus import CorpusProgress
from mini_harness.replay import fold_corpus
from mini_harness.replay.corpus.summary import (
    FileSummary,
    SummaryMerge,
    SummaryOptions,
    summarize_batch,
    summarize_file,
)
from mini_harness.replay.corpus.workers import corpus_report, expand_paths, in_flight
from mini_harness.transcripts import JsonlTranscript
from tests.replay import registries
from tests.replay.corpus_files import write_agent_run, write_calls

REGISTRIES = "tests.replay.registries"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def as_bytes(report: object) -> bytes:
    return orjson.dumps(report.to_json())  # type: ignore[attr-defined]


@pytest.fixture(name="corpus")
def _corpus(tmp_path: Path) -> Path:
    """Five transcripts in two directories (one in doubt, one torn), a note and a bad file."""
    root = tmp_path / "corpus"
    (root / "b" / "deep").mkdir(parents=True)
    write_calls(root / "a1.jsonl", [("echo", None, 1.0), ("echo", None, 3.0), ("read", None, 2.0)])
    write_calls(
        root / "b" / "b1.jsonl",
        [("echo", None, 2.0), ("echo", "timeout", 9.0), ("read", "invalid_input", 0.5)],
    )
    write_calls(root / "b" / "deep" / "c1.jsonl", [("echo", None, 4.0), ("read", None, None)])
    torn = write_calls(root / "b" / "torn.jsonl", [("echo", None, 5.0)])
    with torn.open("ab") as handle:
        handle.write(b'{"type":"ToolCal')
    write_agent_run(
        root / "agent.jsonl",
        stop_reason="final",
        usages=[{"inputTokens": 100, "outputTokens": 7, "cachedTokens": None}],
    )
    (root / "notes.txt").write_text("not a transcript\n")
    (root / "b" / "broken.jsonl").write_text("this is not JSON\n")
    return root


class TestExpandPaths:
    def test_directories_globs_and_files(self, corpus: Path) -> None:
        """A directory gives every *.jsonl below it; a glob its matches; each file once, sorted."""
        found = expand_paths([corpus / "b", str(corpus / "a*.jsonl"), corpus / "a1.jsonl"])
        names = [Path(item.path).relative_to(corpus).as_posix() for item in found]
        assert names == [
            "a1.jsonl",
            "agent.jsonl",
            "b/b1.jsonl",
            "b/broken.jsonl",
            "b/deep/c1.jsonl",
            "b/torn.jsonl",
        ]
        assert all(item.missing is None for item in found)

    def test_names_that_match_nothing_are_kept(self, tmp_path: Path) -> None:
        """A missing file, an empty directory and a glob with no match each say why."""
        (tmp_path / "empty").mkdir()
        found = expand_paths(
            [tmp_path / "nope.jsonl", tmp_path / "empty", str(tmp_path / "*.jsonl")]
        )
        assert [item.missing for item in found] == [
            f"no file matches {tmp_path / '*.jsonl'}",
            f"no *.jsonl file under the directory {tmp_path / 'empty'}",
            None,  # a plain path is folded, and the fold says it is missing
        ]


class TestLinkedDirectories:
    @pytest.mark.parametrize("links", [("b/up",), ("b/up", "b/deep/top")])
    def test_each_file_once_and_the_walk_ends(self, corpus: Path, links: tuple[str, ...]) -> None:
        """Links back up the tree are not followed: `transcript verify DIR` and `replay
        DIR` finish and list each transcript once (one link used to list every file 41
        times; two never finished)."""
        plain = [item.path for item in expand_paths([corpus])]
        for link in links:
            (corpus / link).symlink_to(corpus, target_is_directory=True)
        for command in (["transcript", "verify"], ["replay"]):  # in a process: it may hang
            done = subprocess.run(
                [sys.executable, "-m", "mini_harness", *command, str(corpus), "--json"],
                capture_output=True,
                timeout=60,
                check=False,
            )
            assert done.returncode in {1, 2}, done.stderr
            files = [row["path"] for row in orjson.loads(done.stdout)["files"]]
            assert sorted(files) == plain
        assert [item.path for item in expand_paths([corpus])] == plain
        assert [item.path for item in expand_paths([str(corpus / "**" / "*.jsonl")])] == plain

    def test_a_linked_file_is_listed_once(self, corpus: Path) -> None:
        """A file linked under a second name is one transcript, not two."""
        (corpus / "b" / "again.jsonl").symlink_to(corpus / "a1.jsonl")
        found = [Path(item.path).name for item in expand_paths([corpus])]
        assert found.count("a1.jsonl") + found.count("again.jsonl") == 1


class TestCorpusReport:
    def test_totals_per_tool_and_error_kind(self, corpus: Path) -> None:
        """Calls, failures, rates and in-doubt calls are summed per tool over every file."""
        report = fold_corpus([corpus], workers=1)
        tools = {tool.name: tool.to_json() for tool in report.tools}
        assert tools["echo"]["calls"] == 6
        assert tools["echo"]["failed"] == 1
        assert tools["echo"]["errors"] == {"timeout": {"calls": 1, "rate": 1 / 6}}
        assert tools["read"]["calls"] == 3
        assert tools["read"]["inDoubt"] == 1
        assert tools["read"]["failureRate"] == 1 / 3
        assert report.errors() == {"invalid_input": 1, "timeout": 1}
        assert report.total("in_doubt") == 1

    def test_duration_percentiles_are_exact(self, corpus: Path) -> None:
        """p50/p95/p99 are nearest-rank values of the recorded durations, over all files."""
        report = fold_corpus([corpus], workers=1)
        echo = next(tool for tool in report.tools if tool.name == "echo")
        # echo's durations: 1, 2, 3, 4, 5, 9 ms.
        assert echo.percentiles() == {"p50": 3.0, "p95": 9.0, "p99": 9.0}

    def test_file_statuses_and_exit_code(self, corpus: Path) -> None:
        """Each file is ok, has problems or is unreadable; the exit code is the worst file's."""
        report = fold_corpus([corpus], workers=1)
        statuses = {Path(item.path).name: item.status for item in report.files}
        assert statuses == {
            "a1.jsonl": "ok",
            "agent.jsonl": "ok",
            "b1.jsonl": "ok",  # failed calls are not problems of the log
            "broken.jsonl": "unreadable",
            "c1.jsonl": "problems",  # a call in doubt
            "torn.jsonl": "problems",
        }
        assert [Path(path).name for path in report.damaged()] == ["torn.jsonl"]
        assert report.exit_code == 2
        assert fold_corpus([corpus / "a1.jsonl", corpus / "b" / "b1.jsonl"]).exit_code == 0
        assert fold_corpus([corpus / "a1.jsonl", corpus / "b" / "deep"]).exit_code == 1

    def test_agent_runs_and_usage(self, tmp_path: Path) -> None:
        """Agent runs are counted by stop reason (unfinished without RunFinished), usage summed."""
        write_agent_run(
            tmp_path / "one.jsonl",
            stop_reason="final",
            usages=[
                {"inputTokens": 100, "outputTokens": 7, "cachedTokens": None},
                {"inputTokens": 150, "outputTokens": 3, "cachedTokens": 90},
            ],
        )
        write_agent_run(
            tmp_path / "two.jsonl",
            stop_reason="max_steps",
            usages=[{"inputTokens": 10, "outputTokens": 1, "cachedTokens": 0}],
        )
        write_agent_run(tmp_path / "died.jsonl", stop_reason=None, usages=[])
        agent = fold_corpus([tmp_path], workers=1).agent.to_json()
        assert agent == {
            "runs": 3,
            "byStopReason": {"final": 1, "max_steps": 1, "unfinished": 1},
            "modelResponses": 3,
            "usage": {"inputTokens": 260, "outputTokens": 11, "cachedTokens": 90},
        }

    def test_agent_runs_recorded_by_the_loop(self, tmp_path: Path) -> None:
        """Runs of the real agent loop are counted by how they ended, with their usage."""
        script = tmp_path / "script.json"
        usage = {"inputTokens": 40, "outputTokens": 5, "cachedTokens": 8}
        call = {"name": "echo", "arguments": {"text": "hi"}}
        responses = [{"text": "", "toolCalls": [call], "usage": usage}, {"text": "done"}]
        script.write_bytes(orjson.dumps({"responses": responses}))
        runs = tmp_path / "runs"
        for name, steps in (("final", "3"), ("cut", "1")):
            result = run(
                "run", "task", "--model", f"script:{script}", "--max-steps", steps,
                "--workspace", str(tmp_path), "--log", str(runs / f"{name}.jsonl"),
            )  # fmt: skip
            assert result.exit_code in (0, 1), result.output
        agent = fold_corpus([runs], workers=1).agent.to_json()
        assert agent["byStopReason"] == {"final": 1, "max_steps": 1}
        assert agent["modelResponses"] == 3
        assert agent["usage"] == {"inputTokens": 80, "outputTokens": 10, "cachedTokens": 16}


class TestDeterminism:
    def test_workers_give_the_same_report(self, corpus: Path) -> None:
        """Folding in two processes gives the report of one, byte for byte."""
        assert as_bytes(fold_corpus([corpus], workers=2)) == as_bytes(
            fold_corpus([corpus], workers=1)
        )

    def test_finish_order_and_batches_do_not_matter(self, corpus: Path) -> None:
        """Summaries merged in any order, one by one or in batches, make the same report."""
        options = SummaryOptions()
        paths = [item.path for item in expand_paths([corpus])]
        summaries = [summarize_file(path, options) for path in paths]
        reports = set()
        for order in itertools.islice(itertools.permutations(summaries), 0, None, 97):
            merge = SummaryMerge()
            for summary in order:
                merge.add(summary)
            reports.add(as_bytes(corpus_report(merge)))
        for size in (2, 4):
            merge = SummaryMerge()
            for start in reversed(range(0, len(paths), size)):
                merge.merge(summarize_batch(paths[start : start + size], options))
            reports.add(as_bytes(corpus_report(merge)))
        assert len(reports) == 1

    def test_a_lost_worker_loses_only_its_batch(self, corpus: Path) -> None:
        """A batch whose worker is lost is one unreadable row per file, saying why; the
        other batches are kept under the paths as given."""
        paths = [item.path for item in expand_paths([corpus]) if "broken" not in item.path]
        lost, kept = paths[:2], paths[2:]

        def result(batch: list[str]) -> SummaryMerge:
            if batch == [os.path.abspath(path) for path in lost]:
                raise ConnectionError("gone")
            return summarize_batch(batch, SummaryOptions())

        parts = list(
            in_flight(
                [lost, kept],
                1,
                start=tuple,
                wait=lambda running: running[:1],
                result=lambda batch: result(list(batch)),
                lost=(ConnectionError, "worker died"),
            )
        )
        rows = [row for part in parts for row in part.rows]
        assert [row.path for row in rows] == paths
        assert [row.error for row in rows[:2]] == ["worker died: gone"] * 2
        assert [row.error for row in rows[2:]] == [None] * len(kept)

    def test_a_bad_file_does_not_stop_the_rest(self, corpus: Path) -> None:
        """An unreadable file is one row with its error; every other file is still folded."""
        report = fold_corpus([corpus], workers=2)
        broken = next(item for item in report.files if item.path.endswith("broken.jsonl"))
        assert broken.error is not None
        assert "not a mini-harness transcript" in broken.error
        assert sum(item.calls for item in report.files) == 9


class TestCli:
    def test_text_report(self, corpus: Path) -> None:
        """`replay DIR` prints a line per file, the tool table and totals; 2 for a bad file."""
        result = run("replay", str(corpus), "--workers", "1")
        assert result.exit_code == 2
        lines = result.stdout.splitlines()
        assert lines[0] == "[mini-harness] Replaying 6 transcripts (fold: no handler is called)"
        assert lines[1] == f"ok          {corpus / 'a1.jsonl'}  1 run, 3 calls, 0 problems"
        assert (
            f"problems    {corpus / 'b/deep/c1.jsonl'}  1 run, 2 calls (1 in doubt), 0 problems"
            in lines
        )
        assert any(line.startswith("echo ") and "  3.000  " in line for line in lines)
        agent = "Agent runs: 1 (final 1); model responses: 1; usage: 100 input, 7 output"
        assert f"{agent}, 0 cached tokens" in lines
        assert lines[-1].startswith("[mini-harness] 6 files: 3 ok, 2 with problems, 1 unreadable;")
        assert "Error: 1 of 6 files cannot be read; 2 of 6 files have problems" in result.stderr

    def test_json_report(self, corpus: Path) -> None:
        """`--json` prints the report as one JSON document, the same with any worker count."""
        one = run("replay", str(corpus), "--json", "--workers", "1")
        two = run("replay", str(corpus), "--json", "--workers", "2")
        assert one.stdout == two.stdout
        document = orjson.loads(one.stdout)
        assert document["totals"]["files"] == 6
        assert document["exitCode"] == one.exit_code == 2

    def test_single_file_keeps_its_report(self, corpus: Path) -> None:
        """One file path is replayed as before: its runs and calls, not a corpus report."""
        result = run("replay", str(corpus / "a1.jsonl"))
        assert result.exit_code == 0
        assert result.stdout.startswith(f"[mini-harness] Replaying {corpus / 'a1.jsonl'} (fold")
        assert "Tools " not in result.stdout

    def test_verify_corpus(self, corpus: Path) -> None:
        """`transcript verify DIR` gives each file's problems and head hash, and the worst exit."""
        result = run("transcript", "verify", str(corpus / "b" / "deep"), str(corpus / "a1.jsonl"))
        assert result.exit_code == 1
        lines = result.stdout.splitlines()
        assert (
            lines[0]
            == "[mini-harness] Verifying 2 transcripts (chain, protocol and in-doubt calls)"
        )
        assert lines[1].startswith(
            f"ok          {corpus / 'a1.jsonl'}  1 run, 3 calls, 0 problems; head "
        )
        assert "is in doubt" in lines[3]

    def test_rerun_a_corpus(self, tmp_path: Path) -> None:
        """`--rerun` re-runs each file's calls with the safety rules and counts the outcomes."""
        for name, run_id in (("a.jsonl", "a" * 32), ("b.jsonl", "b" * 32)):
            with JsonlTranscript(tmp_path / name) as sink:
                runtime = ToolRuntime(registries.recording(), sink, run_id=run_id)
                runtime.dispatch("echo", {"text": name})
                runtime.dispatch("write_note", {"note": "side effect"})
                with pytest.raises(ToolCallError):
                    runtime.dispatch("flaky", {})
        auto = ["--approve", "auto"]  # the idempotent flaky runs again: the policy allows it
        same = run("replay", str(tmp_path), "--rerun", "--registry", f"{REGISTRIES}:same", *auto)
        assert same.exit_code == 0
        assert (
            "Re-run: 4 matched, 0 diverged, 0 now-fails, 0 now-succeeds, 2 skipped" in same.stdout
        )
        upper_args = ["--rerun", "--registry", f"{REGISTRIES}:upper", *auto]
        upper = [
            run("replay", str(tmp_path), *upper_args, *workers)
            for workers in (["--workers", "1"], ["--workers", "2"])
        ]
        assert upper[0].exit_code == upper[1].exit_code == 1
        assert upper[0].stdout == upper[1].stdout
        assert "Re-run: 0 matched, 2 diverged, 0 now-fails, 2 now-succeeds, 2 skipped" in (
            upper[0].stdout
        )

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--run", "1"], "--run applies to one transcript, not to a corpus"),
            (["--context-report"], "--context-report applies to one transcript, not to a corpus"),
            (["--workers", "0"], "0 is not in the range x>=1"),
            (["--workers", "1", "--workers", "2"], "--workers may be given only once"),
        ],
    )
    def test_usage_errors(self, corpus: Path, args: list[str], message: str) -> None:
        """Options that only make sense for one file, or a bad worker count, are usage errors."""
        result = run("replay", str(corpus), *args)
        assert result.exit_code == 2
        assert message in result.stderr

    def test_ray_before_the_paths(self, corpus: Path) -> None:
        """`--ray PATH` would take the path as an address: the error says how to write it."""
        for given in (str(corpus), str(corpus / "*.jsonl")):
            result = run("replay", "--ray", given)
            assert result.exit_code == 2
            assert f"--ray took {given} as a cluster address: put --ray after the paths" in (
                result.stderr
            )

    def test_ray_not_installed(self, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without Ray, `--ray` is one error line saying how to install it, and exit 2."""
        monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets when missing
        monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # restored afterwards
        result = run("replay", str(corpus), "--ray")
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (
            "[mini-harness] Error: --ray needs Ray: pip install 'mini-harness[ray]' "
            "(or 'ray>=2.9,<3')\n"
        )


class TestProgress:
    def test_on_a_terminal(self, corpus: Path) -> None:
        """On a terminal: files done, events per second and the ETA from the bytes left."""
        files = [item for item in expand_paths([corpus]) if item.size]
        stream = _Terminal()
        clock = iter([0.0, 2.0, 4.0])
        progress = CorpusProgress(files, stream=stream, clock=lambda: next(clock))
        first = files[0]
        progress.file_done(FileSummary(first.path, events=4000))
        left = sum(item.size for item in files[1:])
        seconds = int(2.0 * left / first.size)
        assert stream.getvalue() == (
            f"\r\x1b[K[mini-harness] 1/{len(files)} files, 2.0k events/s, "
            f"ETA {seconds // 60}:{seconds % 60:02d}"
        )
        progress.clear()
        assert stream.getvalue().endswith("\r\x1b[K")

    def test_not_on_a_pipe(self, corpus: Path) -> None:
        """Without a terminal nothing is written."""
        stream = io.StringIO()
        progress = CorpusProgress(expand_paths([corpus]), stream=stream)
        progress.file_done(FileSummary(os.fspath(corpus / "a1.jsonl"), events=5))
        progress.clear()
        assert stream.getvalue() == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestVerifyAndReplayAgree:
    def test_failed_calls_are_counted_alike(self, corpus: Path) -> None:
        """`transcript verify DIR` counts the failed calls `replay DIR` counts (b1 has 2)."""
        directory = str(corpus / "b")
        said = {}
        for command in (["transcript", "verify"], ["replay"]):
            last = run(*command, directory).stdout.splitlines()[-1]
            said[command[0]] = last[last.index(" calls (") : last.index(")")]
        assert said["transcript"] == said["replay"]
        assert "(2 failed, " in said["replay"]
