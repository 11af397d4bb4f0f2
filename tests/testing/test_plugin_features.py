"""The golden fixture's features in a user's project: CLI goldens, custom normalization,
where files go, and the messages for checks that cannot work."""

from __future__ import annotations

import re

import pytest

from mini_harness.transcripts import TranscriptReader

CONFTEST = """
import pytest


@pytest.fixture
def golden_normalization(golden_normalization):
    return golden_normalization.with_scrub(r"lucky \\d+", "lucky <n>")
"""

USER_TESTS = """
import random

from mini_harness import MemorySink, ToolRegistry, ToolRuntime


def make_registry():
    registry = ToolRegistry()
    registry.add(
        "lucky",
        lambda data: {"message": f"lucky {random.randint(0, 10**9)}",
                      "token": random.random(), "nested": {"token": random.random()}},
        description="Returns something different every time.",
        input_schema={"type": "object"},
    )
    return registry


def test_cli(golden):
    golden.check_cli("--tool", "echo", "--tool-input", '{"text":"hi"}')
    golden.check_cli("--tool", "echo", "--tool-input", "[1]", name="error")


def test_scrubbed(golden):
    golden.volatile_field("token", numbered=True)
    runtime = golden.runtime(make_registry())
    runtime.dispatch("lucky", {})
    runtime.dispatch("lucky", {})
    golden.check_transcript()


def test_memory_sink(golden):
    sink = MemorySink()
    ToolRuntime(make_registry(), sink).dispatch("lucky", {})
    golden.volatile_field("token")
    golden.check_transcript(sink)


def test_twice(golden):
    golden.check_text("one\\n")
    golden.check_text("two\\n")


def test_paths(golden, tmp_path, request):
    golden.check_text(f"{tmp_path}/a {request.config.rootpath}/b {golden.tmp_path}/c\\n")


def test_no_runtime(golden):
    golden.check_transcript()
"""

CLI_GOLDEN = """\
$ mini-harness --tool echo --tool-input '{"text":"hi"}'
--- stdout
[mini-harness] Task: Dispatch tool: echo
[mini-harness] Model provider: none
[mini-harness] Manual tool dispatch completed.
[mini-harness] Tool result: {"name":"echo","input":{"text":"hi"},"output":{"text":"hi"},\
"durationMs":0}
--- stderr (empty)
--- exit code 0
"""

ERROR_GOLDEN = """\
$ mini-harness --tool echo --tool-input '[1]'
--- stdout (empty)
--- stderr
[mini-harness] Error: Invalid input for echo: expected object
--- exit code 1
"""


@pytest.fixture(name="project")
def _project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:hypothesispytest", *args)


class TestFeatures:
    def test_cli_goldens(self, project: pytest.Pytester) -> None:
        """check_cli stores the command, both streams and the exit code, one file per name."""
        run(project, "--update-goldens", "-k", "test_cli").assert_outcomes(passed=1)
        goldens = project.path / "goldens" / "test_user"
        assert (goldens / "test_cli.txt").read_text() == CLI_GOLDEN
        assert (goldens / "test_cli.error.txt").read_text() == ERROR_GOLDEN

    def test_text_diff(self, project: pytest.Pytester) -> None:
        """A text golden that no longer matches fails with a plain unified diff of its lines."""
        run(project, "--update-goldens", "-k", "test_cli").assert_outcomes(passed=1)
        golden = project.path / "goldens" / "test_user" / "test_cli.txt"
        golden.write_text(CLI_GOLDEN.replace("provider: none", "provider: nobody"))
        result = run(project, "-k", "test_cli")
        result.assert_outcomes(failed=1)
        lines = result.stdout.lines
        start = lines.index(
            "output differs from golden file goldens/test_user/test_cli.txt (- golden, + obtained):"
        )
        assert lines[start + 1 : start + 10] == [
            "--- golden",
            "+++ obtained",
            "@@ -1,7 +1,7 @@",
            """ $ mini-harness --tool echo --tool-input '{"text":"hi"}'""",
            " --- stdout",
            " [mini-harness] Task: Dispatch tool: echo",
            "-[mini-harness] Model provider: nobody",
            "+[mini-harness] Model provider: none",
            " [mini-harness] Manual tool dispatch completed.",
        ]

    def test_custom_normalization_is_stable(self, project: pytest.Pytester) -> None:
        """A conftest scrub and volatile fields make random outputs golden-stable."""
        run(project, "--update-goldens", "-k", "scrubbed or memory").assert_outcomes(passed=2)
        run(project, "-k", "scrubbed or memory").assert_outcomes(passed=2)
        golden = project.path / "goldens" / "test_user" / "test_scrubbed.jsonl"
        text = golden.read_text()
        assert '"message":"lucky <n>"' in text
        assert '"token":"token-1","nested":{"token":"token-2"}' in text
        assert '"token":"token-3","nested":{"token":"token-4"}' in text
        reader = TranscriptReader(golden)
        assert len(list(reader)) == 6
        assert reader.problems == []
        memory = (project.path / "goldens" / "test_user" / "test_memory_sink.jsonl").read_text()
        assert '"token":"<token>","nested":{"token":"<token>"}' in memory

    def test_paths_become_placeholders(self, project: pytest.Pytester) -> None:
        """The test's tmp_path and the rootdir are written as <tmp> and <rootdir>."""
        run(project, "--update-goldens", "-k", "test_paths").assert_outcomes(passed=1)
        golden = project.path / "goldens" / "test_user" / "test_paths.txt"
        assert golden.read_text() == "<tmp>/a <rootdir>/b <tmp>/c\n"

    def test_check_twice_needs_a_name(self, project: pytest.Pytester) -> None:
        """Two checks of one golden in a test fail and say to give one a name."""
        result = run(project, "--update-goldens", "-k", "test_twice")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "golden file goldens/test_user/test_twice.txt is checked twice in "
                "test_user.py::test_twice: give the second check its own name="
            ]
        )

    def test_a_test_run_again_checks_its_golden_again(self, project: pytest.Pytester) -> None:
        """A test run a second time in one session (as a rerun plugin does) checks its
        golden again instead of failing as a second check."""
        project.makeconftest(
            CONFTEST
            + "\n\nfrom _pytest.runner import runtestprotocol\n\n"
            + "def pytest_runtest_protocol(item, nextitem):\n"
            + "    runtestprotocol(item, nextitem=None, log=True)\n"
            + "    runtestprotocol(item, nextitem=nextitem, log=True)\n"
            + "    return True\n"
        )
        run(project, "--update-goldens", "-k", "test_paths").assert_outcomes(passed=2)

    def test_two_tests_one_golden(self, project: pytest.Pytester) -> None:
        """Two tests whose goldens would be one file fail instead of overwriting each other."""
        project.makepyfile(
            test_clash="""
            import pytest

            @pytest.mark.parametrize("text", ["a", "b"], ids=["x/y", "x_y"])
            def test_clash(golden, text):
                golden.check_text(text)
            """
        )
        result = run(project, "--update-goldens", "test_clash.py")
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            [
                "golden file goldens/test_clash/test_clash-x_y.txt is checked by "
                "test_clash.py::test_clash[x/y] and by test_clash.py::test_clash[x_y]: give one "
                "of the checks its own name="
            ]
        )

    def test_two_tests_one_golden_under_xdist(self, project: pytest.Pytester) -> None:
        """Under pytest-xdist, two tests whose goldens would be one file are caught when
        two workers run them."""
        pytest.importorskip("xdist")
        project.makepyfile(
            test_clash="""
            import pytest

            @pytest.mark.parametrize(
                "text",
                [pytest.param("a", id="x/y", marks=pytest.mark.xdist_group("one")),
                 pytest.param("b", id="x_y", marks=pytest.mark.xdist_group("two"))],
            )
            def test_clash(golden, text):
                golden.check_text(text)
            """
        )
        args = ("--update-goldens", "-n", "2", "--dist", "loadgroup", "-v", "test_clash.py")
        result = project.runpytest_subprocess("-p", "no:hypothesispytest", *args)
        result.assert_outcomes(passed=1, failed=1)
        # Each group went to a worker of its own: the clash was seen across processes.
        workers = re.findall(r"^\[(gw\d)\] .*test_clash\[", result.stdout.str(), re.MULTILINE)
        assert sorted(set(workers)) == ["gw0", "gw1"], result.stdout.str()
        assert re.search(
            r"golden file goldens/test_clash/test_clash-x_y\.txt is checked by "
            r"test_clash\.py::test_clash\[x.y\] and by test_clash\.py::test_clash\[x.y\]",
            result.stdout.str(),
        )

    def test_updates_are_listed_under_xdist(self, project: pytest.Pytester) -> None:
        """--update-goldens under pytest-xdist lists each golden a worker wrote."""
        pytest.importorskip("xdist")
        project.makepyfile(
            test_many="""
            import pytest

            @pytest.mark.parametrize("n", range(4))
            def test_many(golden, n):
                golden.check_text(f"{n}\\n")
            """
        )
        args = ("--update-goldens", "-n", "2", "test_many.py")
        result = project.runpytest_subprocess("-p", "no:hypothesispytest", *args)
        result.assert_outcomes(passed=4)
        created = sorted(line for line in result.outlines if line.startswith("created: goldens"))
        assert created == [f"created: goldens/test_many/test_many-{n}.txt" for n in range(4)]
        (project.path / "test_many.py").write_text(
            (project.path / "test_many.py").read_text().replace('f"{n}', 'f"{n + 1}')
        )
        result = project.runpytest_subprocess("-p", "no:hypothesispytest", *args)
        updated = sorted(line for line in result.outlines if line.startswith("updated: goldens"))
        assert updated == [f"updated: goldens/test_many/test_many-{n}.txt" for n in range(4)]

    def test_transcript_without_runtime(self, project: pytest.Pytester) -> None:
        """check_transcript() with nothing recorded says what is missing."""
        result = run(project, "-k", "test_no_runtime")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*check_transcript(): no golden.runtime() was used in this test"]
        )

    def test_golden_directory_override(self, project: pytest.Pytester) -> None:
        """A conftest can move the goldens by overriding the golden_directory fixture."""
        project.makeconftest(
            CONFTEST
            + "\n\n@pytest.fixture\ndef golden_directory(tmp_path_factory, request):\n"
            + "    return request.node.path.parent / 'snapshots'\n"
        )
        run(project, "--update-goldens", "-k", "test_cli").assert_outcomes(passed=1)
        assert (project.path / "snapshots" / "test_cli.txt").read_text() == CLI_GOLDEN

    def test_golden_command_runs_in_process(self, project: pytest.Pytester) -> None:
        """A conftest's golden_command is what golden.cli runs when a test names none."""
        project.makeconftest(
            CONFTEST
            + "\n\nimport click\n\n"
            + "@click.command()\n@click.argument('word')\n"
            + "def shout(word):\n    click.echo(word.upper())\n\n"
            + "@pytest.fixture\ndef golden_command():\n    return shout\n"
        )
        project.makepyfile(
            test_where="def test_where(golden):\n    golden.check_cli('hi', prog='shout')\n"
        )
        run(project, "--update-goldens", "-k", "test_where").assert_outcomes(passed=1)
        written = project.path / "goldens" / "test_where" / "test_where.txt"
        assert (
            written.read_text()
            == "$ shout hi\n--- stdout\nHI\n--- stderr (empty)\n--- exit code 0\n"
        )

    def test_plugin_can_be_disabled(self, project: pytest.Pytester) -> None:
        """The entry point is named mini-harness: `-p no:mini-harness` turns it off."""
        result = run(project, "-p", "no:mini-harness", "-k", "test_cli")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*fixture 'golden' not found*"])
