"""`mini-harness transcript export`: a transcript as one flat table whose columns each
hold one type (test_data_recipes.py loads it into DuckDB, pandas and polars)."""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mini_harness import ToolRegistry, ToolRuntime
from mini_harness.cli import cli
from mini_harness.transcripts import JsonlTranscript
from mini_harness.transcripts.rows import COLUMNS


def mixed_log(path: Path) -> Path:
    """A transcript whose `output` is an array on one line, an object on another, and a
    failure (with fields no other line has) late in the file."""
    registry = ToolRegistry()
    registry.add("letters", lambda data: list(data["word"]), description="", input_schema={
        "type": "object", "properties": {"word": {"type": "string"}}})  # fmt: skip
    registry.add("count", lambda data: {"n": len(data["word"])}, description="", input_schema={
        "type": "object", "properties": {"word": {"type": "string"}}})  # fmt: skip
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registry, sink)
        runtime.dispatch("letters", {"word": "ab"})
        runtime.dispatch("count", {"word": "abc"})
        runtime.attempt("count", {"word": 3})
    return path


def json_type(value: Any) -> str:
    return type(value).__name__


class TestExport:
    def test_every_column_holds_one_type(self, tmp_path: Path) -> None:
        """Every row has the same columns, and each column one JSON type (or null), though
        the lines' `output` changes type and fields come late."""
        log = mixed_log(tmp_path / "t.jsonl")
        result = CliRunner().invoke(cli, ["transcript", "export", str(log)])
        assert result.exit_code == 0, result.output
        rows = [orjson.loads(line) for line in result.stdout.splitlines()]
        assert len(rows) == len(log.read_bytes().splitlines())
        assert all(tuple(row) == COLUMNS for row in rows)
        for column in COLUMNS:
            types = {json_type(row[column]) for row in rows if row[column] is not None}
            assert len(types) <= 1, (column, types)  # step: null outside agent runs
        failed = [row for row in rows if row["type"] == "ToolFailed"]
        assert [(row["name"], row["errorKind"]) for row in failed] == [("count", "invalid_input")]
        outputs = [orjson.loads(row["event"]).get("output") for row in rows]
        assert ["a", "b"] in outputs
        assert {"n": 3} in outputs

    def test_csv_loads_into_a_sql_engine(self, tmp_path: Path) -> None:
        """The CSV export loads as it is into a SQL table (SQLite here) and answers a
        question about the calls, reading the event's JSON where it needs more."""
        log = mixed_log(tmp_path / "t.jsonl")
        result = CliRunner().invoke(cli, ["transcript", "export", "--format", "csv", str(log)])
        assert result.exit_code == 0, result.output
        reader = csv.DictReader(io.StringIO(result.stdout))
        assert tuple(reader.fieldnames or ()) == COLUMNS
        db = sqlite3.connect(":memory:")
        db.execute(f"CREATE TABLE events ({', '.join(COLUMNS)})")
        db.executemany(
            f"INSERT INTO events VALUES ({', '.join('?' * len(COLUMNS))})",
            ([row[column] or None for column in COLUMNS] for row in reader),
        )
        query = (
            "SELECT name, type, json_extract(event, '$.output') FROM events "
            "WHERE type IN ('ToolSucceeded', 'ToolFailed') ORDER BY CAST(seq AS INTEGER)"
        )
        assert db.execute(query).fetchall() == [
            ("letters", "ToolSucceeded", '["a","b"]'),
            ("count", "ToolSucceeded", '{"n":3}'),
            ("count", "ToolFailed", None),
        ]

    def test_a_damaged_file_exports_its_good_lines_and_fails(self, tmp_path: Path) -> None:
        """A torn tail is reported (exit 1) after the lines before it are exported."""
        log = mixed_log(tmp_path / "t.jsonl")
        with log.open("ab") as handle:
            handle.write(b'{"type":"ToolCal')
        result = CliRunner().invoke(cli, ["transcript", "export", str(log)])
        assert result.exit_code == 1
        assert len(result.stdout.splitlines()) == len(log.read_bytes().splitlines()) - 1
        torn = "[torn-tail] line 9: torn tail at line 9, byte "
        assert f"Error: {log}: {torn}" in result.stderr

    def test_problems_are_named_as_replay_names_them(self, tmp_path: Path) -> None:
        """A line missing from the chain and a torn tail: export names each problem with
        its kind and line in the words `replay` uses, not as a Python object."""
        log = mixed_log(tmp_path / "t.jsonl")
        lines = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"".join(lines[:3] + lines[4:]) + b'{"type":"ToolCal')
        result = CliRunner().invoke(cli, ["transcript", "export", str(log)])
        replayed = CliRunner().invoke(cli, ["replay", str(log)])
        assert (result.exit_code, replayed.exit_code) == (1, 1)
        named = [line.partition(f"Error: {log}: ")[2] for line in result.stderr.splitlines()]
        assert named == [
            "[integrity] line 4: seq 4, expected 3",
            "[integrity] line 4: prev does not match the hash of the line before",
            f"[torn-tail] line {len(lines)}: torn tail at line {len(lines)}, byte "
            f"{len(b''.join(lines)) - len(lines[3])}: 16 bytes (no newline at end of file)",
        ]
        for problem in named:
            assert f"  {problem}" in replayed.stdout.splitlines()
