"""Re-running recorded file-tool calls sees today's files: a changed file diverges."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from mini_harness.cli import cli


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


class TestReadFileRerun:
    def test_changed_file_diverges_with_a_content_diff(self, tmp_path: Path) -> None:
        """Record read_file, change the file: --rerun reports that call diverged, with a diff."""
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "notes.txt").write_text("first line\nsecond line\n")
        log = tmp_path / "t.jsonl"
        recorded = run(
            "--workspace", str(workspace),
            "--tool", "read_file", "--tool-input", '{"path":"notes.txt"}', "--log", str(log),
        )  # fmt: skip
        assert recorded.exit_code == 0, recorded.output

        same = run("replay", str(log), "--rerun", "--workspace", str(workspace))
        assert same.exit_code == 0, same.output
        assert "matched" in same.stdout

        (workspace / "notes.txt").write_text("first line\nsecond line, edited\n")
        changed = run("replay", str(log), "--rerun", "--workspace", str(workspace))
        assert changed.exit_code == 1
        assert "read_file  diverged" in changed.stdout
        assert '-  "text": "first line\\nsecond line\\n"' in changed.stdout
        assert '+  "text": "first line\\nsecond line, edited\\n"' in changed.stdout
        assert "1 diverged" in changed.stdout

    def test_root_workspace_option_reaches_replay(self, tmp_path: Path) -> None:
        """`mini-harness --workspace DIR replay --rerun` re-runs in that workspace too."""
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "a.txt").write_text("a\n")
        log = tmp_path / "t.jsonl"
        args = ["--tool", "read_file", "--tool-input", '{"path":"a.txt"}', "--log", str(log)]
        assert run("--workspace", str(workspace), *args).exit_code == 0
        result = run("--workspace", str(workspace), "replay", str(log), "--rerun")
        assert result.exit_code == 0, result.output
        assert "1 matched" in result.stdout
